"""A small stand-in for one ClaimDB database: the REAL schema of BIRD's ``formula_1`` (tables,
columns, types, primary and foreign keys, read at run time from a schema folder), filled with
deterministic generated rows, plus 36 claims of our own whose answers are computed from those rows.

The BIRD databases are a user download (about 1.5 GB), so tests and the demo cannot rely on them.
:func:`build_sample` writes, under ``out_dir``::

    formula_1/formula_1.sqlite                  the database (BIRD layout)
    formula_1/database_description/<table>.csv  column descriptions (BIRD layout)
    schema/dev_tables.json                      that one database in the Spider/BIRD layout
    schema/database_description/formula_1/      the same descriptions, for ``--schema``
    claims.jsonl                                the claims (ClaimDB format plus ``sql``/``answer``)

The rows are synthetic (a race simulation over four seasons with real-looking drivers, teams and
circuits) and consistent through every foreign key: results follow qualifying, lap times add up
to race times, standings add up the results. Nothing in the claims is hard-coded: each ENTAILED or
CONTRADICTED claim is written from the rows its reference SQL returns through the safe query
layer (:meth:`tabverify.database.Database.query`); a CONTRADICTED claim perturbs that value or
swaps in another entity. The ``sql`` and ``answer`` fields are for tests: a verifier never sees
them (:func:`tabverify.claimdb.claims.read_claims` ignores them).

Command line: ``python -m tabverify.claimdb.sample OUT_DIR --schema DIR [--seed N]``.
"""

from __future__ import annotations

import argparse
import csv
import datetime as dt
import io
import json
import os
import random
import sqlite3
import sys
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

from tabverify.claimdb.schema import TABLES_FILES, load_schemas
from tabverify.database import Database, Schema, TableSchema, connect
from tabverify.database.duck import quote
from tabverify.errors import DatabaseError, DatasetError
from tabverify.files import read_json

DB_ID = "formula_1"
"""The ClaimDB (BIRD dev) database the sample stands in for."""

SEASONS = (2010, 2011, 2012, 2013)
PIT_STOPS_FROM = 2011
"""Pit stops are recorded from this season on (as in BIRD, where they start in 2011)."""
LAP_TIMES_FROM = 2013
"""Lap times are recorded from this season on (keeps the sample at a few thousand lap rows)."""
POINTS = (25, 18, 15, 12, 10, 8, 6, 4, 2, 1)
"""Points for positions 1-10 (the 2010 system)."""
Q2_CARS, Q3_CARS = 15, 10
"""How many cars go through to the second and third qualifying periods."""

WIKI = "http://en.wikipedia.org/wiki/"

Row = dict[str, object]

# ---- static reference data -----------------------------------------------------------------------


@dataclass(frozen=True)
class _Driver:
    ref: str
    code: str
    number: int | None
    forename: str
    surname: str
    dob: str
    nationality: str
    skill: float

    @property
    def name(self) -> str:
        return f"{self.forename} {self.surname}"


@dataclass(frozen=True)
class _Constructor:
    ref: str
    name: str
    nationality: str
    strength: tuple[float, float, float, float]
    """Car strength (0-1) in each of :data:`SEASONS`."""


@dataclass(frozen=True)
class _Circuit:
    ref: str
    name: str
    location: str
    country: str
    lat: float
    lng: float
    alt: int
    grand_prix: str
    laps: int
    length_km: float
    base_lap_ms: int
    month: int
    day: int
    start: str


DRIVERS = (
    _Driver("vettel", "VET", 5, "Sebastian", "Vettel", "1987-07-03", "German", 0.97),
    _Driver("webber", "WEB", None, "Mark", "Webber", "1976-08-27", "Australian", 0.80),
    _Driver("hamilton", "HAM", 44, "Lewis", "Hamilton", "1985-01-07", "British", 0.93),
    _Driver("button", "BUT", 22, "Jenson", "Button", "1980-01-19", "British", 0.83),
    _Driver("perez", "PER", 11, "Sergio", "Pérez", "1990-01-26", "Mexican", 0.72),
    _Driver("michael_schumacher", "MSC", None, "Michael", "Schumacher", "1969-01-03", "German", 0.76),
    _Driver("rosberg", "ROS", 6, "Nico", "Rosberg", "1985-06-27", "German", 0.82),
    _Driver("alonso", "ALO", 14, "Fernando", "Alonso", "1981-07-29", "Spanish", 0.94),
    _Driver("massa", "MAS", 19, "Felipe", "Massa", "1981-04-25", "Brazilian", 0.74),
    _Driver("raikkonen", "RAI", 7, "Kimi", "Räikkönen", "1979-10-17", "Finnish", 0.86),
    _Driver("grosjean", "GRO", 8, "Romain", "Grosjean", "1986-04-17", "French", 0.72),
    _Driver("kubica", "KUB", None, "Robert", "Kubica", "1984-12-07", "Polish", 0.84),
    _Driver("petrov", "PET", None, "Vitaly", "Petrov", "1984-09-08", "Russian", 0.60),
    _Driver("sutil", "SUT", 99, "Adrian", "Sutil", "1983-01-11", "German", 0.65),
    _Driver("liuzzi", "LIU", None, "Vitantonio", "Liuzzi", "1981-08-06", "Italian", 0.55),
    _Driver("resta", "DIR", None, "Paul", "di Resta", "1986-04-16", "British", 0.66),
    _Driver("hulkenberg", "HUL", 27, "Nico", "Hülkenberg", "1987-08-19", "German", 0.75),
    _Driver("kobayashi", "KOB", 10, "Kamui", "Kobayashi", "1986-09-13", "Japanese", 0.66),
    _Driver("rosa", "DLR", None, "Pedro", "de la Rosa", "1971-02-24", "Spanish", 0.55),
    _Driver("gutierrez", "GUT", 21, "Esteban", "Gutiérrez", "1991-08-05", "Mexican", 0.55),
    _Driver("buemi", "BUE", None, "Sébastien", "Buemi", "1988-10-31", "Swiss", 0.60),
    _Driver("alguersuari", "ALG", None, "Jaime", "Alguersuari", "1990-03-23", "Spanish", 0.60),
    _Driver("ricciardo", "RIC", 3, "Daniel", "Ricciardo", "1989-07-01", "Australian", 0.76),
    _Driver("vergne", "VER", 25, "Jean-Éric", "Vergne", "1990-04-25", "French", 0.66),
    _Driver("barrichello", "BAR", None, "Rubens", "Barrichello", "1972-05-23", "Brazilian", 0.68),
    _Driver("maldonado", "MAL", 13, "Pastor", "Maldonado", "1985-03-09", "Venezuelan", 0.62),
    _Driver("bruno_senna", "SEN", None, "Bruno", "Senna", "1983-10-15", "Brazilian", 0.58),
    _Driver("bottas", "BOT", 77, "Valtteri", "Bottas", "1989-08-28", "Finnish", 0.70),
    _Driver("kovalainen", "KOV", None, "Heikki", "Kovalainen", "1981-10-19", "Finnish", 0.62),
    _Driver("trulli", "TRU", None, "Jarno", "Trulli", "1974-07-13", "Italian", 0.58),
    _Driver("pic", "PIC", None, "Charles", "Pic", "1990-02-15", "French", 0.50),
    _Driver("garde", "VDG", None, "Giedo", "van der Garde", "1985-04-25", "Dutch", 0.50),
)

CONSTRUCTORS = (
    _Constructor("red_bull", "Red Bull", "Austrian", (0.95, 0.97, 0.90, 0.96)),
    _Constructor("mclaren", "McLaren", "British", (0.90, 0.91, 0.92, 0.74)),
    _Constructor("ferrari", "Ferrari", "Italian", (0.88, 0.85, 0.86, 0.85)),
    _Constructor("mercedes", "Mercedes", "German", (0.78, 0.78, 0.80, 0.90)),
    _Constructor("lotus_f1", "Lotus F1", "British", (0.76, 0.74, 0.85, 0.86)),
    _Constructor("force_india", "Force India", "Indian", (0.66, 0.68, 0.72, 0.70)),
    _Constructor("sauber", "Sauber", "Swiss", (0.62, 0.66, 0.73, 0.62)),
    _Constructor("toro_rosso", "Toro Rosso", "Italian", (0.60, 0.63, 0.62, 0.66)),
    _Constructor("williams", "Williams", "British", (0.64, 0.55, 0.68, 0.56)),
    _Constructor("caterham", "Caterham", "Malaysian", (0.40, 0.42, 0.44, 0.42)),
)

LINEUPS: dict[int, dict[str, tuple[str, str]]] = {
    2010: {"red_bull": ("vettel", "webber"), "mclaren": ("hamilton", "button"),
           "ferrari": ("alonso", "massa"), "mercedes": ("michael_schumacher", "rosberg"),
           "lotus_f1": ("kubica", "petrov"), "force_india": ("sutil", "liuzzi"),
           "sauber": ("kobayashi", "rosa"), "toro_rosso": ("buemi", "alguersuari"),
           "williams": ("barrichello", "hulkenberg"), "caterham": ("kovalainen", "trulli")},
    2011: {"red_bull": ("vettel", "webber"), "mclaren": ("hamilton", "button"),
           "ferrari": ("alonso", "massa"), "mercedes": ("michael_schumacher", "rosberg"),
           "lotus_f1": ("kubica", "petrov"), "force_india": ("sutil", "resta"),
           "sauber": ("kobayashi", "perez"), "toro_rosso": ("buemi", "alguersuari"),
           "williams": ("barrichello", "maldonado"), "caterham": ("kovalainen", "trulli")},
    2012: {"red_bull": ("vettel", "webber"), "mclaren": ("hamilton", "button"),
           "ferrari": ("alonso", "massa"), "mercedes": ("michael_schumacher", "rosberg"),
           "lotus_f1": ("raikkonen", "grosjean"), "force_india": ("resta", "hulkenberg"),
           "sauber": ("kobayashi", "perez"), "toro_rosso": ("ricciardo", "vergne"),
           "williams": ("maldonado", "bruno_senna"), "caterham": ("kovalainen", "petrov")},
    2013: {"red_bull": ("vettel", "webber"), "mclaren": ("button", "perez"),
           "ferrari": ("alonso", "massa"), "mercedes": ("hamilton", "rosberg"),
           "lotus_f1": ("raikkonen", "grosjean"), "force_india": ("sutil", "resta"),
           "sauber": ("hulkenberg", "gutierrez"), "toro_rosso": ("ricciardo", "vergne"),
           "williams": ("maldonado", "bottas"), "caterham": ("pic", "garde")},
}  # fmt: skip
"""Which drivers raced for which constructor in each season (ten teams, twenty cars)."""

CIRCUITS = (
    _Circuit("albert_park", "Albert Park Grand Prix Circuit", "Melbourne", "Australia", -37.8497, 144.968, 10,
             "Australian Grand Prix", 58, 5.303, 89_000, 3, 20, "06:00:00"),
    _Circuit("sepang", "Sepang International Circuit", "Kuala Lumpur", "Malaysia", 2.76083, 101.738, 18,
             "Malaysian Grand Prix", 56, 5.543, 98_000, 3, 27, "08:00:00"),
    _Circuit("shanghai", "Shanghai International Circuit", "Shanghai", "China", 31.3389, 121.22, 5,
             "Chinese Grand Prix", 56, 5.451, 99_000, 4, 14, "07:00:00"),
    _Circuit("bahrain", "Bahrain International Circuit", "Sakhir", "Bahrain", 26.0325, 50.5106, 7,
             "Bahrain Grand Prix", 57, 5.412, 97_000, 4, 21, "12:00:00"),
    _Circuit("catalunya", "Circuit de Barcelona-Catalunya", "Montmeló", "Spain", 41.57, 2.26111, 109,
             "Spanish Grand Prix", 66, 4.655, 86_000, 5, 12, "12:00:00"),
    _Circuit("monaco", "Circuit de Monaco", "Monte-Carlo", "Monaco", 43.7347, 7.42056, 7,
             "Monaco Grand Prix", 78, 3.340, 78_000, 5, 26, "12:00:00"),
    _Circuit("silverstone", "Silverstone Circuit", "Silverstone", "UK", 52.0786, -1.01694, 153,
             "British Grand Prix", 52, 5.891, 94_000, 7, 7, "12:00:00"),
    _Circuit("hungaroring", "Hungaroring", "Budapest", "Hungary", 47.5789, 19.2486, 264,
             "Hungarian Grand Prix", 70, 4.381, 85_000, 7, 28, "12:00:00"),
    _Circuit("spa", "Circuit de Spa-Francorchamps", "Spa", "Belgium", 50.4372, 5.97139, 401,
             "Belgian Grand Prix", 44, 7.004, 111_000, 8, 25, "12:00:00"),
    _Circuit("monza", "Autodromo Nazionale di Monza", "Monza", "Italy", 45.6156, 9.28111, 162,
             "Italian Grand Prix", 53, 5.793, 87_000, 9, 8, "12:00:00"),
    _Circuit("marina_bay", "Marina Bay Street Circuit", "Marina Bay", "Singapore", 1.2914, 103.864, 18,
             "Singapore Grand Prix", 61, 5.065, 109_000, 9, 22, "12:00:00"),
    _Circuit("suzuka", "Suzuka Circuit", "Suzuka", "Japan", 34.8431, 136.541, 45,
             "Japanese Grand Prix", 53, 5.807, 96_000, 10, 6, "06:00:00"),
    _Circuit("interlagos", "Autódromo José Carlos Pace", "São Paulo", "Brazil", -23.7036, -46.6997, 785,
             "Brazilian Grand Prix", 71, 4.309, 76_000, 11, 24, "16:00:00"),
    _Circuit("yas_marina", "Yas Marina Circuit", "Abu Dhabi", "UAE", 24.4672, 54.6031, 3,
             "Abu Dhabi Grand Prix", 55, 5.554, 105_000, 11, 3, "13:00:00"),
)  # fmt: skip

CALENDARS: dict[int, tuple[str, ...]] = {
    2010: ("albert_park", "bahrain", "monaco", "silverstone", "monza", "interlagos"),
    2011: ("sepang", "shanghai", "catalunya", "hungaroring", "spa", "suzuka"),
    2012: ("albert_park", "shanghai", "monaco", "silverstone", "marina_bay", "yas_marina"),
    2013: ("sepang", "bahrain", "monaco", "spa", "monza", "interlagos"),
}
"""The six Grands Prix of each season (run in date order)."""

FINISHED = 1
RETIREMENTS = {3: "Accident", 4: "Collision", 5: "Engine", 6: "Gearbox", 9: "Hydraulics", 10: "Electrical",
               20: "Spun off", 22: "Suspension", 23: "Brakes", 26: "Puncture"}  # fmt: skip
LAPPED = {11: "+1 Lap", 12: "+2 Laps", 13: "+3 Laps", 14: "+4 Laps"}
STATUSES = {FINISHED: "Finished", 2: "Disqualified", **RETIREMENTS, **LAPPED}

# ---- the result ---------------------------------------------------------------------------------


@dataclass(frozen=True)
class SamplePaths:
    """Where :func:`build_sample` wrote the sample.

    ``root``: the output folder (the ``--db-dir`` of a ClaimDB run: ``root/<db_id>/<db_id>.sqlite``);
    ``db_path``: the SQLite file; ``claims_path``: ``claims.jsonl``; ``schema_dir``: a schema folder
    (``dev_tables.json`` + ``database_description/``) describing just this database."""

    root: Path
    db_path: Path
    claims_path: Path
    schema_dir: Path
    db_id: str = DB_ID


# ---- formatting helpers ---------------------------------------------------------------------------


def lap_text(ms: int) -> str:
    """Milliseconds as a lap time, ``1:23.456``."""
    minutes, rest = divmod(ms, 60_000)
    return f"{minutes}:{rest // 1000:02d}.{rest % 1000:03d}"


def race_text(ms: int) -> str:
    """Milliseconds as a race time, ``1:32:05.123``."""
    hours, rest = divmod(ms, 3_600_000)
    minutes, rest = divmod(rest, 60_000)
    return f"{hours}:{minutes:02d}:{rest // 1000:02d}.{rest % 1000:03d}"


def duration_text(ms: int) -> str:
    """A pit stop's duration as BIRD writes it: seconds (``23.456``), or ``1:02.345`` past a minute."""
    return f"{ms // 1000}.{ms % 1000:03d}" if ms < 60_000 else lap_text(ms)


def _clock(start: str, offset_ms: int) -> str:
    hours, minutes, seconds = (int(part) for part in start.split(":"))
    total = (hours * 3600 + minutes * 60 + seconds + offset_ms // 1000) % 86_400
    return f"{total // 3600:02d}:{total % 3600 // 60:02d}:{total % 60:02d}"


def _race_date(year: int, month: int, day: int) -> str:
    """The Sunday on or after ``year-month-day``."""
    date = dt.date(year, month, day)
    return (date + dt.timedelta(days=(6 - date.weekday()) % 7)).isoformat()


def _wiki(title: str) -> str:
    return WIKI + title.replace(" ", "_")


# ---- the race simulation ------------------------------------------------------------------------


@dataclass
class _Entry:
    """One car in one season (driver, constructor, car number, pace rating 0-1) and its state in
    the race being simulated (grid slot, lap times in ms, laps completed before retiring, stops as
    ``(lap, duration ms)``)."""

    driver_id: int
    constructor_id: int
    number: int
    rating: float
    grid: int = 0
    laps: list[int] | None = None
    retired_after: int | None = None
    stops: tuple[tuple[int, int], ...] = ()


class _Generator:
    """Builds every row of the sample from one seeded :class:`random.Random`."""

    def __init__(self, seed: int):
        self.rng = random.Random(seed)
        self.tables: dict[str, list[Row]] = {}
        self.driver_ids = {d.ref: i for i, d in enumerate(DRIVERS, start=1)}
        self.constructor_ids = {c.ref: i for i, c in enumerate(CONSTRUCTORS, start=1)}
        self.circuits = {c.ref: c for c in CIRCUITS}
        self.circuit_ids = {c.ref: i for i, c in enumerate(CIRCUITS, start=1)}

    def add(self, table: str, row: Row) -> None:
        self.tables.setdefault(table, []).append(row)

    def build(self) -> dict[str, list[Row]]:
        for i, c in enumerate(CIRCUITS, start=1):
            self.add("circuits", {"circuitId": i, "circuitRef": c.ref, "name": c.name, "location": c.location,
                                  "country": c.country, "lat": c.lat, "lng": c.lng, "alt": c.alt,
                                  "url": _wiki(c.name)})  # fmt: skip
        for i, k in enumerate(CONSTRUCTORS, start=1):
            self.add("constructors", {"constructorId": i, "constructorRef": k.ref, "name": k.name,
                                      "nationality": k.nationality, "url": _wiki(k.name)})  # fmt: skip
        for i, d in enumerate(DRIVERS, start=1):
            self.add("drivers", {"driverId": i, "driverRef": d.ref, "number": d.number, "code": d.code,
                                 "forename": d.forename, "surname": d.surname, "dob": d.dob,
                                 "nationality": d.nationality, "url": _wiki(d.name)})  # fmt: skip
        for status_id, status in sorted(STATUSES.items()):
            self.add("status", {"statusId": status_id, "status": status})
        order = [c.ref for c in CONSTRUCTORS]  # car numbers follow last season's constructors' order
        race_id = 0
        for season, year in enumerate(SEASONS):
            self.add("seasons", {"year": year, "url": _wiki(f"{year} Formula One season")})
            seats = [n for n in range(1, 26) if n != 13]
            entries: list[_Entry] = []
            for position, team in enumerate(order):
                for seat, ref in enumerate(LINEUPS[year][team]):
                    constructor = CONSTRUCTORS[self.constructor_ids[team] - 1]
                    driver = DRIVERS[self.driver_ids[ref] - 1]
                    rating = 0.65 * constructor.strength[season] + 0.35 * driver.skill
                    entries.append(_Entry(self.driver_ids[ref], self.constructor_ids[team],
                                          seats[2 * position + seat], rating))  # fmt: skip
            calendar = sorted(
                CALENDARS[year], key=lambda ref: (self.circuits[ref].month, self.circuits[ref].day)
            )
            driver_points: dict[int, list[float]] = {}
            team_points: dict[int, list[float]] = {}
            for round_number, ref in enumerate(calendar, start=1):
                race_id += 1
                circuit = self.circuits[ref]
                self.add("races", {"raceId": race_id, "year": year, "round": round_number,
                                   "circuitId": self.circuit_ids[ref], "name": circuit.grand_prix,
                                   "date": _race_date(year, circuit.month, circuit.day),
                                   "time": circuit.start,
                                   "url": _wiki(f"{year} {circuit.grand_prix}")})  # fmt: skip
                self._race(race_id, year, circuit, entries, driver_points, team_points)
            final = sorted(team_points.items(), key=lambda item: (-item[1][0], -item[1][1], item[0]))
            order = [CONSTRUCTORS[constructor_id - 1].ref for constructor_id, _ in final]
        return self.tables

    def _qualifying(self, race_id: int, circuit: _Circuit, entries: list[_Entry]) -> None:
        rng, base = self.rng, circuit.base_lap_ms * 0.985
        pace = {e.driver_id: base * (1 + 0.03 * (1 - e.rating) + rng.gauss(0, 0.0025)) for e in entries}

        def lap(e: _Entry, factor: float) -> int:
            return round(pace[e.driver_id] * factor + rng.gauss(0, 0.002 * base))

        q1 = {e.driver_id: lap(e, 1.0) for e in entries}
        by_q1 = sorted(entries, key=lambda e: (q1[e.driver_id], e.driver_id))
        q2 = {e.driver_id: lap(e, 0.997) for e in by_q1[:Q2_CARS]}
        by_q2 = sorted(by_q1[:Q2_CARS], key=lambda e: (q2[e.driver_id], e.driver_id))
        q3 = {e.driver_id: lap(e, 0.994) for e in by_q2[:Q3_CARS]}
        by_q3 = sorted(by_q2[:Q3_CARS], key=lambda e: (q3[e.driver_id], e.driver_id))
        grid = by_q3 + by_q2[Q3_CARS:] + by_q1[Q2_CARS:]
        for position, e in enumerate(grid, start=1):
            e.grid = position
            number = len(self.tables.get("qualifying", ())) + 1
            self.add("qualifying", {
                "qualifyId": number, "raceId": race_id, "driverId": e.driver_id,
                "constructorId": e.constructor_id, "number": e.number, "position": position,
                "q1": lap_text(q1[e.driver_id]),
                "q2": lap_text(q2[e.driver_id]) if e.driver_id in q2 else None,
                "q3": lap_text(q3[e.driver_id]) if e.driver_id in q3 else None,
            })  # fmt: skip

    def _drive(self, circuit: _Circuit, e: _Entry) -> None:
        """Lap times (pit stops included), the pit stops and any retirement of one car."""
        rng, base, total = self.rng, circuit.base_lap_ms, circuit.laps
        pace = base * (1 + 0.03 * (1 - e.rating) + rng.gauss(0, 0.003))
        count = rng.choice((1, 2, 2, 2, 3))
        laps_at = sorted({min(total - 1, max(2, round(total * (i + 1) / (count + 1)) + rng.randint(-3, 3)))
                          for i in range(count)})  # fmt: skip
        stops = []
        for lap in laps_at:
            duration = max(19_000, round(rng.gauss(22_500, 1_200)))
            if rng.random() < 0.06:
                duration += rng.randint(4_000, 15_000)  # a slow stop
            stops.append((lap, duration))
        pit = dict(stops)
        laps, since = [], 0
        for lap in range(1, total + 1):
            ms = pace + rng.gauss(0, 0.004 * base) + 25 * since
            if lap == 1:
                ms += 4_000 + 200 * e.grid
            if lap in pit:
                ms += pit[lap] - 4_000
                since = 0
            else:
                since += 1
            laps.append(round(ms))
        e.laps, e.stops = laps, tuple(stops)
        e.retired_after = None
        if rng.random() < 0.05 + 0.08 * (1 - e.rating):
            e.retired_after = rng.randint(0, total - 1)

    def _race(
        self,
        race_id: int,
        year: int,
        circuit: _Circuit,
        entries: list[_Entry],
        driver_points: dict[int, list[float]],
        team_points: dict[int, list[float]],
    ) -> None:
        self._qualifying(race_id, circuit, entries)
        for e in sorted(entries, key=lambda e: e.grid):
            self._drive(circuit, e)
        total = circuit.laps
        running = [e for e in entries if e.retired_after is None]
        if not running:  # never a race without a finisher
            best = max(entries, key=lambda e: (e.rating, -e.driver_id))
            best.retired_after = None
            running = [best]
        cumulative = {e.driver_id: _accumulate(e.laps or []) for e in entries}
        winner_ms = min(cumulative[e.driver_id][-1] for e in running)
        done: dict[int, int] = {}
        for e in entries:
            if e.retired_after is not None:
                done[e.driver_id] = e.retired_after
            else:  # a car finishes the lap it is on when the winner takes the flag
                times = cumulative[e.driver_id]
                done[e.driver_id] = next((k + 1 for k, t in enumerate(times) if t >= winner_ms), total)
        finishers = sorted(
            running, key=lambda e: (-done[e.driver_id], cumulative[e.driver_id][done[e.driver_id] - 1])
        )
        retired = sorted((e for e in entries if e.retired_after is not None),
                         key=lambda e: (-done[e.driver_id], e.grid))  # fmt: skip
        fastest: dict[int, tuple[int, int]] = {}
        for e in entries:
            completed = (e.laps or [])[: done[e.driver_id]]
            if completed:
                pool = list(enumerate(completed, start=1))[1:] or list(enumerate(completed, start=1))
                lap, ms = min(pool, key=lambda item: (item[1], item[0]))
                fastest[e.driver_id] = (lap, ms)
        ranks = {
            d: r for r, (d, _) in enumerate(sorted(fastest.items(), key=lambda i: (i[1][1], i[0])), start=1)
        }
        race_points: dict[int, float] = {}
        for order, e in enumerate(finishers + retired, start=1):
            classified = e.retired_after is None
            laps = done[e.driver_id]
            points = float(POINTS[order - 1]) if classified and order <= len(POINTS) else 0.0
            race_points[e.driver_id] = points
            time, ms, status = None, None, FINISHED
            if classified and laps == total:
                ms = cumulative[e.driver_id][-1]
                time = race_text(ms) if order == 1 else f"+{(ms - winner_ms) / 1000:.3f}"
            elif classified:
                status = min(LAPPED, key=lambda s: abs(s - 10 - (total - laps)))
            else:
                status = sorted(RETIREMENTS)[self.rng.randrange(len(RETIREMENTS))]
            best = fastest.get(e.driver_id)
            speed = f"{circuit.length_km * 3_600_000 / best[1]:.3f}" if best else None
            self.add("results", {
                "resultId": len(self.tables.get("results", ())) + 1, "raceId": race_id,
                "driverId": e.driver_id, "constructorId": e.constructor_id, "number": e.number,
                "grid": e.grid, "position": order if classified else None,
                "positionText": str(order) if classified else "R", "positionOrder": order,
                "points": points, "laps": laps, "time": time, "milliseconds": ms,
                "fastestLap": best[0] if best else None, "rank": ranks.get(e.driver_id),
                "fastestLapTime": lap_text(best[1]) if best else None, "fastestLapSpeed": speed,
                "statusId": status,
            })  # fmt: skip
        if year >= PIT_STOPS_FROM:
            for e in sorted(entries, key=lambda e: e.driver_id):
                times = cumulative[e.driver_id]
                for stop, (lap, duration) in enumerate(e.stops, start=1):
                    if lap <= done[e.driver_id]:
                        self.add("pitStops", {
                            "raceId": race_id, "driverId": e.driver_id, "stop": stop, "lap": lap,
                            "time": _clock(circuit.start, times[lap - 1]),
                            "duration": duration_text(duration),
                            "milliseconds": duration,
                        })  # fmt: skip
        if year >= LAP_TIMES_FROM:
            for lap in range(1, total + 1):
                on_lap = [e for e in entries if done[e.driver_id] >= lap]
                on_lap.sort(key=lambda e: (cumulative[e.driver_id][lap - 1], e.driver_id))
                for position, e in enumerate(on_lap, start=1):
                    ms = (e.laps or [])[lap - 1]
                    self.add("lapTimes", {"raceId": race_id, "driverId": e.driver_id, "lap": lap,
                                          "position": position, "time": lap_text(ms),
                                          "milliseconds": ms})  # fmt: skip
        self._standings(race_id, entries, race_points, driver_points, team_points)

    def _standings(
        self,
        race_id: int,
        entries: list[_Entry],
        race_points: dict[int, float],
        driver_points: dict[int, list[float]],
        team_points: dict[int, list[float]],
    ) -> None:
        team_race: dict[int, float] = {}
        for e in entries:
            points = race_points[e.driver_id]
            won = 1.0 if points == POINTS[0] else 0.0
            tally = driver_points.setdefault(e.driver_id, [0.0, 0.0])
            tally[0] += points
            tally[1] += won
            team = team_points.setdefault(e.constructor_id, [0.0, 0.0])
            team[0] += points
            team[1] += won
            team_race[e.constructor_id] = team_race.get(e.constructor_id, 0.0) + points
        for constructor_id in sorted(team_race):
            self.add("constructorResults", {
                "constructorResultsId": len(self.tables.get("constructorResults", ())) + 1, "raceId": race_id,
                "constructorId": constructor_id, "points": team_race[constructor_id], "status": None,
            })  # fmt: skip
        for table, key, tallies in (("driverStandings", "driverId", driver_points),
                                    ("constructorStandings", "constructorId", team_points)):  # fmt: skip
            ranked = sorted(tallies.items(), key=lambda item: (-item[1][0], -item[1][1], item[0]))
            for position, (ident, (points, wins)) in enumerate(ranked, start=1):
                self.add(table, {
                    f"{table}Id": len(self.tables.get(table, ())) + 1, "raceId": race_id, key: ident,
                    "points": points, "position": position, "positionText": str(position), "wins": int(wins),
                })  # fmt: skip


def _accumulate(values: Sequence[int]) -> list[int]:
    total, result = 0, []
    for value in values:
        total += value
        result.append(total)
    return result


# ---- writing the database ------------------------------------------------------------------------


def create_table_sql(table: TableSchema) -> str:
    """``CREATE TABLE`` for a schema table: its columns with their declared types, its primary key
    and its foreign keys."""
    parts = [f"{quote(c.name)} {c.type.upper()}".rstrip() for c in table.columns]
    if table.primary_key:
        parts.append(f"PRIMARY KEY ({', '.join(quote(c) for c in table.primary_key)})")
    for key in table.foreign_keys:
        parts.append(
            f"FOREIGN KEY ({', '.join(quote(c) for c in key.columns)}) "
            f"REFERENCES {quote(key.ref_table)} ({', '.join(quote(c) for c in key.ref_columns)})"
        )
    body = ",\n    ".join(parts)
    return f"CREATE TABLE {quote(table.name)} (\n    {body}\n)"


def _parents_first(schema: Schema) -> list[TableSchema]:
    """The tables in an order where every table comes after the tables its foreign keys name."""
    left = list(schema.tables)
    done: set[str] = set()
    ordered: list[TableSchema] = []
    while left:
        ready = [t for t in left if all(k.ref_table in done or k.ref_table == t.name for k in t.foreign_keys)]
        if not ready:  # a cycle: keep the schema order for the rest
            ready = left[:1]
        for table in ready:
            ordered.append(table)
            done.add(table.name)
            left.remove(table)
    return ordered


def _check_layout(schema: Schema, rows: dict[str, list[Row]]) -> None:
    """DatasetError when the schema's tables or columns are not the ones the generator fills."""
    problems = []
    if set(schema.table_names) != set(rows):
        problems.append(f"tables {sorted(schema.table_names)} (the sample fills {sorted(rows)})")
    for table in schema.tables:
        sample = rows.get(table.name)
        if sample and [c.name for c in table.columns] != list(sample[0]):
            problems.append(
                f"{table.name} columns {[c.name for c in table.columns]} (the sample fills {list(sample[0])})"
            )
    if problems:
        raise DatasetError(
            f"the {DB_ID} schema does not have the layout this sample generates (BIRD dev {DB_ID}): "
            + "; ".join(problems)
        )


def write_database(path: Path, schema: Schema, rows: dict[str, list[Row]]) -> None:
    """An SQLite file at ``path`` with the schema's tables (parents first, foreign keys enforced
    while inserting), written to a temporary name and moved into place."""
    temporary = path.with_name(path.name + ".tmp")
    temporary.unlink(missing_ok=True)
    conn = sqlite3.connect(temporary)
    try:
        conn.execute("PRAGMA foreign_keys = ON")
        for table in _parents_first(schema):
            conn.execute(create_table_sql(table))
            names = [c.name for c in table.columns]
            insert = (
                f"INSERT INTO {quote(table.name)} ({', '.join(quote(n) for n in names)}) "
                f"VALUES ({', '.join('?' for _ in names)})"
            )
            conn.executemany(insert, [tuple(row[n] for n in names) for row in rows[table.name]])
        conn.commit()
        problems = conn.execute("PRAGMA foreign_key_check").fetchall()
        if problems:
            raise DatasetError(f"{path}: generated rows break foreign keys: {problems[:3]}")
    except sqlite3.Error as exc:
        conn.close()
        temporary.unlink(missing_ok=True)
        raise DatasetError(f"{path}: cannot write the sample database ({exc})") from None
    except BaseException:
        conn.close()
        temporary.unlink(missing_ok=True)
        raise
    conn.close()
    os.replace(temporary, path)


def _tables_file(schema_dir: Path) -> Path:
    if schema_dir.is_file():
        return schema_dir
    for name in TABLES_FILES:
        if (schema_dir / name).is_file():
            return schema_dir / name
    raise DatasetError(f"{schema_dir}: no {' or '.join(TABLES_FILES)}; give the ClaimDB schema folder")


def _raw_entry(schema_dir: Path) -> dict:
    tables_file = _tables_file(schema_dir)
    data = read_json(tables_file, "Spider/BIRD tables.json", DatasetError)
    for entry in data if isinstance(data, list) else []:
        if isinstance(entry, dict) and entry.get("db_id") == DB_ID:
            return entry
    raise DatasetError(f"{tables_file}: no database {DB_ID!r}; give the ClaimDB schema folder")


def description_csv(table: TableSchema, entry: dict) -> str:
    """A BIRD ``<table>.csv`` description file written from the schema (descriptions as read from
    the schema folder; ``column_name`` from the Spider ``column_names``)."""
    tables = entry["table_names_original"]
    readable = {
        str(original[1]): str(name[1])
        for original, name in zip(
            entry["column_names_original"], entry.get("column_names") or [], strict=False
        )
        if 0 <= int(original[0]) < len(tables) and tables[int(original[0])] == table.name
    }
    buffer = io.StringIO()
    writer = csv.writer(buffer, lineterminator="\n")
    writer.writerow(
        ["original_column_name", "column_name", "column_description", "data_format", "value_description"]
    )
    for column in table.columns:
        # no description means the source row had neither column_description nor column_name
        readable_name = readable.get(column.name, "") if column.description else ""
        description, values = column.description or "", column.value_description or ""
        writer.writerow([column.name, readable_name, description, column.type, values])
    return buffer.getvalue()


def _write_text(path: Path, text: str) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text, encoding="utf-8", newline="")


# ---- the claims ----------------------------------------------------------------------------------


def _literal(text: str) -> str:
    return "'" + text.replace("'", "''") + "'"


def _number(value: object) -> str:
    """A whole number without ``.0`` and with thousands separators; other numbers as they are."""
    if isinstance(value, float) and value.is_integer():
        value = int(value)
    return f"{value:,}" if isinstance(value, int) else str(value)


def _seconds(text: str) -> float:
    """A duration written ``23.456`` or ``1:02.345``, in seconds."""
    minutes, _, seconds = text.rpartition(":")
    return int(minutes or 0) * 60 + float(seconds)


def _perturb(value: float, rng: random.Random, share: float) -> float:
    """``value`` moved up or down by ``share`` to 1.6 ``share`` of itself (at least 1)."""
    step = max(abs(value) * share * rng.uniform(1.0, 1.6), 1.0)
    return value + step if value - step < 0 or rng.random() < 0.5 else value - step


def _as_float(value: object) -> float:
    if isinstance(value, bool) or not isinstance(value, int | float):
        raise DatasetError(f"sample claim query returned {value!r} where a number was expected")
    return float(value)


def _as_int(value: object) -> int:
    number = _as_float(value)
    if not number.is_integer():
        raise DatasetError(f"sample claim query returned {value!r} where a whole number was expected")
    return int(number)


class _ClaimWriter:
    """Claims written from the rows their reference SQL returns through the safe query layer."""

    def __init__(self, db: Database, seed: int):
        self.db = db
        self.rng = random.Random(seed * 7919 + 1)
        self.records: list[dict[str, object]] = []

    def rows(self, sql: str) -> list[list[object]]:
        """The rows of one query (DatasetError when it fails or returns more than 1,000 rows)."""
        result = self.db.query(sql, max_rows=1000, timeout_s=30.0)
        if not result.ok:
            raise DatasetError(f"sample claim query failed ({result.error}): {sql}")
        if result.truncated:
            raise DatasetError(f"sample claim query returned too many rows: {sql}")
        return [list(row) for row in result.rows]

    def first(self, sql: str) -> list[object]:
        """The first row of a query (DatasetError when there is none)."""
        rows = self.rows(sql)
        if not rows:
            raise DatasetError(f"sample claim query returned no rows: {sql}")
        return rows[0]

    def number(self, sql: str) -> float:
        """The single value of a one-row, one-column query, as a number."""
        rows = self.rows(sql)
        if len(rows) != 1 or len(rows[0]) != 1:
            raise DatasetError(f"sample claim query did not return one value: {sql}")
        return _as_float(rows[0][0])

    def unique_first(self, sql: str, key: int) -> bool:
        """Whether the first two rows of ``sql`` differ in column ``key`` (a superlative with no tie)."""
        rows = self.rows(sql + " LIMIT 2")
        return len(rows) == 1 or (len(rows) == 2 and rows[0][key] != rows[1][key])

    def races(self, where: str) -> list[tuple[int, str]]:
        """(year, name) of the races matching ``where``, in raceId order."""
        return [
            (_as_int(y), str(n))
            for y, n in self.rows(f"SELECT year, name FROM races WHERE {where} ORDER BY raceId")
        ]

    def add(
        self, label: str, claim: str, extra_info: str, sql: str = "", category: str | None = None
    ) -> None:
        """One claim; ``answer`` is what ``sql`` returns now (empty for NOT ENOUGH INFO)."""
        record: dict[str, object] = {"claim_id": len(self.records) + 1, "db_name": DB_ID, "label": label}
        if category:
            record["category"] = category
        answer = self.rows(sql) if sql else []
        record.update({"claim": claim, "extra_info": extra_info, "sql": sql, "answer": answer})
        self.records.append(record)

    def pair(self, entailed: tuple[str, str], contradicted: tuple[str, str], extra_info: str) -> None:
        """An ENTAILED and a CONTRADICTED claim, each given as ``(claim, sql)``."""
        self.add("ENTAILED", entailed[0], extra_info, entailed[1])
        self.add("CONTRADICTED", contradicted[0], extra_info, contradicted[1])


_JOIN_RESULTS = (
    "FROM results AS r JOIN races AS ra ON ra.raceId = r.raceId JOIN drivers AS d ON d.driverId = r.driverId"
)
_FULL_NAME = "full name refers to forename and surname"


def _name(row: Sequence[object]) -> str:
    """``forename surname`` from the first two columns of a row."""
    return f"{row[0]} {row[1]}"


def _season_top(w: _ClaimWriter) -> None:
    """The user story: the driver with the most points in a season (SUM, 3-table join, ORDER BY);
    the contradicted claim names the runner-up (with the runner-up's own total)."""

    def sql(year: int) -> str:
        return (
            f"SELECT d.forename, d.surname, SUM(r.points) AS total_points {_JOIN_RESULTS} "
            f"WHERE ra.year = {year} GROUP BY d.driverId ORDER BY total_points DESC"
        )

    years = [y for y in reversed(SEASONS) if w.unique_first(sql(y), 2)]
    if len(years) < 2:
        raise DatasetError("no two seasons with a single top scorer; try another seed")
    top = w.first(sql(years[0]) + " LIMIT 1")
    runner = w.rows(sql(years[1]) + " LIMIT 2")[1]
    w.pair(
        (
            f"{_name(top)} is the driver with the most points in the {years[0]} season, totaling "
            f"{_number(top[2])}.",
            sql(years[0]) + " LIMIT 1",
        ),
        (
            f"{_name(runner)} is the driver with the most points in the {years[1]} season, totaling "
            f"{_number(runner[2])}.",
            sql(years[1]) + " LIMIT 1",
        ),
        f"the most points refers to MAX(SUM(points)); season refers to year; {_FULL_NAME}",
    )


def _average_pit_stop(w: _ClaimWriter) -> None:
    """AVG with rounding ("about 22.92 seconds" for 22.92075)."""

    def sql(year: int, name: str) -> str:
        return (
            "SELECT AVG(p.milliseconds) / 1000.0 FROM pitStops AS p JOIN races AS ra ON ra.raceId = p.raceId "
            f"WHERE ra.year = {year} AND ra.name = {_literal(name)}"
        )

    races = w.races("raceId IN (SELECT raceId FROM pitStops)")
    (y1, n1), (y2, n2) = races[2], races[-3]
    true, other = w.number(sql(y1, n1)), w.number(sql(y2, n2))
    wrong = _perturb(other, w.rng, 0.12)
    w.pair(
        (f"The average pit stop at the {y1} {n1} lasted about {true:.2f} seconds.", sql(y1, n1)),
        (f"The average pit stop at the {y2} {n2} lasted about {wrong:.2f} seconds.", sql(y2, n2)),
        "average pit stop duration refers to AVG(milliseconds) / 1000; the duration is in seconds",
    )


def _completion_rate(w: _ClaimWriter) -> None:
    """A percentage over a 3-table join."""

    def sql(nationality: str, start: int, end: int) -> str:
        return (
            "SELECT CAST(SUM(CASE WHEN r.time IS NOT NULL THEN 1 ELSE 0 END) AS REAL) * 100 / COUNT(*) "
            f"{_JOIN_RESULTS} WHERE d.nationality = {_literal(nationality)} "
            f"AND ra.year BETWEEN {start} AND {end}"
        )

    true, other = w.number(sql("German", 2011, 2013)), w.number(sql("British", 2010, 2012))
    wrong = other + 20 if other < 60 else other - 25
    w.pair(
        (
            f"Across the 2011-2013 seasons, German drivers completed approximately {true:.2f}% of their "
            "Formula 1 races.",
            sql("German", 2011, 2013),
        ),
        (
            f"British drivers completed roughly {wrong:.0f}% of their Formula 1 races in the 2010-2012 "
            "seasons.",
            sql("British", 2010, 2012),
        ),
        "completed the race refers to time is not null; percentage = DIVIDE(COUNT(time is not null), "
        "COUNT(driverId)) * 100; the seasons refer to year",
    )


def _retirements(w: _ClaimWriter) -> None:
    """A COUNT over a join: the race with the most retirements, and a miscounted one."""

    def sql(year: int, name: str) -> str:
        return (
            "SELECT COUNT(*) FROM results AS r JOIN races AS ra ON ra.raceId = r.raceId "
            f"WHERE ra.year = {year} AND ra.name = {_literal(name)} AND r.position IS NULL"
        )

    counts = sorted(((_as_int(w.number(sql(y, n))), y, n) for y, n in w.races("1 = 1")), key=lambda c: -c[0])
    (n1, y1, name1), (n2, y2, name2) = counts[0], counts[len(counts) // 2]
    w.pair(
        (f"Exactly {n1} drivers retired from the {y1} {name1}.", sql(y1, name1)),
        (f"Exactly {n2 + 2} drivers retired from the {y2} {name2}.", sql(y2, name2)),
        "retired refers to position is null",
    )


def _running_total(w: _ClaimWriter) -> None:
    """A window function: the round where a driver's running points total first passed a mark (the
    champion of one season; then a runner-up of another, with the next or previous round named)."""

    def sql(forename: str, surname: str, year: int, mark: int) -> str:
        return (
            "SELECT round, name, running_points FROM (SELECT ra.round, ra.name, SUM(r.points) OVER "
            f"(ORDER BY ra.round) AS running_points {_JOIN_RESULTS} WHERE d.forename = {_literal(forename)} "
            f"AND d.surname = {_literal(surname)} AND ra.year = {year}) WHERE running_points > {mark} "
            "ORDER BY round LIMIT 1"
        )

    made: list[tuple[str, str]] = []
    for year in (2012, 2010, 2011, 2013):
        scored = w.rows(
            f"SELECT d.forename, d.surname, r.points {_JOIN_RESULTS} WHERE ra.year = {year} "
            "ORDER BY ra.round, r.positionOrder"
        )
        by_driver: dict[tuple[str, str], list[int]] = {}
        for forename, surname, points in scored:
            by_driver.setdefault((str(forename), str(surname)), []).append(_as_int(points))
        ranked = sorted(by_driver.items(), key=lambda item: (-sum(item[1]), item[0]))
        forename, surname = ranked[1][0] if made else ranked[0][0]
        totals = _accumulate(by_driver[(forename, surname)])
        # the first round from the third on where the driver scored: the mark lies just below its total
        k = next((k for k in range(2, len(totals)) if totals[k] > totals[k - 1]), None)
        if k is None:
            continue
        low, high = totals[k - 1], totals[k] - 1
        mark = max((m for m in range(low, high + 1) if m % 5 == 0), default=low)
        query = sql(forename, surname, year, mark)
        row = w.first(query)
        round_number, name = _as_int(row[0]), str(row[1])
        if made:  # the contradicted claim names the next (or the previous) round instead
            races = {
                _as_int(r): str(n) for r, n in w.rows(f"SELECT round, name FROM races WHERE year = {year}")
            }
            round_number = round_number + 1 if round_number + 1 in races else round_number - 1
            name = races[round_number]
        claim = (
            f"In the {year} season, {forename} {surname}'s running points total first went above {mark} "
            f"at the {name} (round {round_number})."
        )
        made.append((claim, query))
        if len(made) == 2:
            break
    if len(made) < 2:
        raise DatasetError("no season for the running-total claims; try another seed")
    w.pair(
        made[0],
        made[1],
        "running points total refers to SUM(points) OVER (ORDER BY round); season refers to year; "
        f"{_FULL_NAME}",
    )


def _fastest_lap(w: _ClaimWriter) -> None:
    """A superlative over lapTimes (3-table join); the contradicted claim names the runner-up."""

    def sql(year: int, name: str) -> str:
        return (
            "SELECT d.forename, d.surname, lt.time FROM lapTimes AS lt "
            "JOIN races AS ra ON ra.raceId = lt.raceId "
            "JOIN drivers AS d ON d.driverId = lt.driverId "
            f"WHERE ra.year = {year} AND ra.name = {_literal(name)} ORDER BY lt.milliseconds"
        )

    def best_two(year: int, name: str) -> list[list[object]]:
        return w.rows(
            "SELECT d.forename, d.surname, MIN(lt.milliseconds) AS best FROM lapTimes AS lt JOIN races AS ra "
            "ON ra.raceId = lt.raceId JOIN drivers AS d ON d.driverId = lt.driverId "
            f"WHERE ra.year = {year} AND ra.name = {_literal(name)} GROUP BY d.driverId ORDER BY best LIMIT 2"
        )

    races = [
        r
        for r in w.races("raceId IN (SELECT raceId FROM lapTimes)")
        if len({b[2] for b in best_two(*r)}) == 2
    ]
    if len(races) < 2:
        raise DatasetError("no two races with a single fastest lap; try another seed")
    (y1, n1), (y2, n2) = races[0], races[-1]
    best = w.first(sql(y1, n1) + " LIMIT 1")
    runner = best_two(y2, n2)[1]
    w.pair(
        (
            f"The fastest lap of the {y1} {n1} was set by {_name(best)}, a {best[2]}.",
            sql(y1, n1) + " LIMIT 1",
        ),
        (
            f"{_name(runner)} set the fastest lap of the {y2} {n2} with a {lap_text(_as_int(runner[2]))}.",
            sql(y2, n2) + " LIMIT 1",
        ),
        f"the fastest lap refers to MIN(milliseconds) in lapTimes; {_FULL_NAME}",
    )


def _longest_pit_stop(w: _ClaimWriter) -> None:
    """A superlative over pitStops (3-table join); the contradicted claim changes the duration."""

    def sql(year: int) -> str:
        return (
            "SELECT d.forename, d.surname, ra.name, p.duration FROM pitStops AS p JOIN races AS ra "
            "ON ra.raceId = p.raceId JOIN drivers AS d ON d.driverId = p.driverId "
            f"WHERE ra.year = {year} ORDER BY p.milliseconds DESC"
        )

    years = [y for y in reversed(SEASONS) if y >= PIT_STOPS_FROM and w.unique_first(sql(y), 3)]
    if len(years) < 2:
        raise DatasetError("no two seasons with a single longest pit stop; try another seed")
    first, second = w.first(sql(years[0]) + " LIMIT 1"), w.first(sql(years[1]) + " LIMIT 1")
    wrong = _perturb(_seconds(str(second[3])), w.rng, 0.2)
    w.pair(
        (
            f"The longest pit stop of the {years[0]} season was {_name(first)}'s {first[3]}-second stop at "
            f"the {first[2]}.",
            sql(years[0]) + " LIMIT 1",
        ),
        (
            f"The longest pit stop of the {years[1]} season was {_name(second)}'s {wrong:.3f}-second stop at "
            f"the {second[2]}.",
            sql(years[1]) + " LIMIT 1",
        ),
        "the longest pit stop refers to MAX(milliseconds); the duration is in seconds",
    )


def _wins(w: _ClaimWriter) -> None:
    """A COUNT of wins over a 3-table join (the most successful winner, and a miscounted one)."""
    first, last = SEASONS[0], SEASONS[-1]

    def sql(forename: str, surname: str) -> str:
        return (
            f"SELECT COUNT(*) {_JOIN_RESULTS} WHERE d.forename = {_literal(forename)} AND d.surname = "
            f"{_literal(surname)} AND r.position = 1 AND ra.year BETWEEN {first} AND {last}"
        )

    winners = w.rows(
        f"SELECT d.forename, d.surname, COUNT(*) AS wins {_JOIN_RESULTS} WHERE r.position = 1 "
        "GROUP BY d.driverId ORDER BY wins DESC, d.driverId"
    )
    a, b = winners[0], winners[1] if len(winners) > 1 else winners[0]
    w.pair(
        (f"{_name(a)} won {a[2]} Grands Prix across the {first}-{last} seasons.", sql(str(a[0]), str(a[1]))),
        (
            f"{_name(b)} won {_as_int(b[2]) + 2} Grands Prix across the {first}-{last} seasons.",
            sql(str(b[0]), str(b[1])),
        ),
        f"won refers to position = 1; from {first} to {last} refers to year between {first} and {last}; "
        f"{_FULL_NAME}",
    )


def _average_finish(w: _ClaimWriter) -> None:
    """AVG of the finishing positions of a constructor's cars in a season (3-table join), rounded."""

    def sql(team: str, year: int) -> str:
        return (
            "SELECT AVG(r.position) FROM results AS r JOIN races AS ra ON ra.raceId = r.raceId "
            "JOIN constructors AS c ON c.constructorId = r.constructorId "
            f"WHERE c.name = {_literal(team)} AND ra.year = {year} AND r.position IS NOT NULL"
        )

    true, other = w.number(sql("Ferrari", 2011)), w.number(sql("McLaren", 2012))
    wrong = other + 1.5 if other < 8 else other - 1.5
    w.pair(
        (
            f"Ferrari's cars averaged a finishing position of about {true:.1f} in the 2011 season.",
            sql("Ferrari", 2011),
        ),
        (
            f"McLaren's cars averaged a finishing position of about {wrong:.1f} in the 2012 season.",
            sql("McLaren", 2012),
        ),
        "finishing position refers to position; races the car did not finish (position is null) are "
        "not counted",
    )


def _constructors_champion(w: _ClaimWriter) -> None:
    """The top of the constructors' standings after a season's last round (3-table join, subquery);
    the contradicted claim names the runner-up with its own points."""

    def sql(year: int) -> str:
        return (
            "SELECT c.name, cs.points FROM constructorStandings AS cs "
            "JOIN races AS ra ON ra.raceId = cs.raceId "
            "JOIN constructors AS c ON c.constructorId = cs.constructorId "
            f"WHERE ra.year = {year} AND ra.round = (SELECT MAX(round) FROM races WHERE year = {year}) "
            "ORDER BY cs.position"
        )

    years = [y for y in (2011, 2010, 2012, 2013) if w.unique_first(sql(y), 1)]
    if len(years) < 2:
        raise DatasetError("no two seasons with a single constructors' champion; try another seed")
    top = w.first(sql(years[0]) + " LIMIT 1")
    runner = w.rows(sql(years[1]) + " LIMIT 2")[1]
    w.pair(
        (
            f"{top[0]} finished the {years[0]} season at the top of the constructors' standings with "
            f"{_number(top[1])} points.",
            sql(years[0]) + " LIMIT 1",
        ),
        (
            f"{runner[0]} finished the {years[1]} season at the top of the constructors' standings with "
            f"{_number(runner[1])} points.",
            sql(years[1]) + " LIMIT 1",
        ),
        "the top of the standings refers to position = 1 after the last round (MAX(round)) of the season",
    )


def _pole(w: _ClaimWriter) -> None:
    """The pole sitter by the fastest Q3 time (ORDER BY over a 3-table join); swapped driver."""

    def sql(year: int, name: str) -> str:
        return (
            "SELECT d.forename, d.surname, q.q3 FROM qualifying AS q "
            "JOIN races AS ra ON ra.raceId = q.raceId "
            "JOIN drivers AS d ON d.driverId = q.driverId "
            f"WHERE ra.year = {year} AND ra.name = {_literal(name)} AND q.q3 IS NOT NULL ORDER BY q.q3"
        )

    races = [r for r in w.races("year = 2012") if w.unique_first(sql(*r), 2)]
    if len(races) < 2:
        raise DatasetError("no two races with a single pole time; try another seed")
    (y1, n1), (y2, n2) = races[0], races[-1]
    pole = w.first(sql(y1, n1) + " LIMIT 1")
    runner = w.rows(sql(y2, n2) + " LIMIT 2")[1]
    w.pair(
        (
            f"{_name(pole)} took pole position for the {y1} {n1} with a Q3 lap of {pole[2]}.",
            sql(y1, n1) + " LIMIT 1",
        ),
        (f"{_name(runner)} took pole position for the {y2} {n2}.", sql(y2, n2) + " LIMIT 1"),
        f"pole position refers to MIN(q3); {_FULL_NAME}",
    )


def _countries(w: _ClaimWriter) -> None:
    """COUNT(DISTINCT) over a join."""
    first, last = SEASONS[0], SEASONS[-1]

    def sql(start: int, end: int) -> str:
        return (
            "SELECT COUNT(DISTINCT c.country) FROM races AS ra "
            "JOIN circuits AS c ON c.circuitId = ra.circuitId "
            f"WHERE ra.year BETWEEN {start} AND {end}"
        )

    true, other = _as_int(w.number(sql(first, last))), _as_int(w.number(sql(last - 1, last)))
    w.pair(
        (
            f"Between {first} and {last}, Formula 1 Grands Prix were held in {true} different countries.",
            sql(first, last),
        ),
        (
            f"Between {last - 1} and {last}, Formula 1 Grands Prix were held in {other + 3} different "
            "countries.",
            sql(last - 1, last),
        ),
        "country refers to circuits.country; the seasons refer to races.year",
    )


def _not_enough_info(w: _ClaimWriter) -> None:
    """Twelve NOT ENOUGH INFO claims on the sample's own drivers, races and numbers (so they stay
    close to what the database holds): four need what the schema lacks (a pit stop's cause, tyre
    compounds, weather, attendance), four are what-ifs, four are value judgements."""
    last = SEASONS[-1]
    stop = w.first(
        "SELECT d.forename, d.surname, p.duration, ra.year, ra.name FROM pitStops AS p JOIN races AS ra "
        "ON ra.raceId = p.raceId JOIN drivers AS d ON d.driverId = p.driverId "
        f"WHERE ra.year = {last} ORDER BY p.milliseconds DESC LIMIT 1"
    )
    year, race = w.races(f"year = {last}")[1]
    where_race = f"ra.year = {year} AND ra.name = {_literal(race)}"
    fastest = w.first(
        f"SELECT d.forename, d.surname, r.fastestLapTime {_JOIN_RESULTS} WHERE {where_race} AND r.rank = 1"
    )
    winners = w.rows(
        f"SELECT d.forename, d.surname, ra.year, ra.name, r.grid {_JOIN_RESULTS} "
        "WHERE r.position = 1 ORDER BY ra.raceId"
    )
    first_win = winners[0]
    from_behind = sorted(winners, key=lambda row: -_as_int(row[4]))[0]  # the win from furthest back
    retired = w.rows(
        f"SELECT d.forename, d.surname, ra.year, ra.name, r.laps, s.status {_JOIN_RESULTS} "
        "JOIN status AS s ON s.statusId = r.statusId WHERE r.position IS NULL AND r.grid <= 6 "
        "ORDER BY ra.raceId, r.grid LIMIT 1"
    )
    champion = w.first(
        f"SELECT d.forename, d.surname, SUM(r.points) AS total {_JOIN_RESULTS} WHERE ra.year = {last} "
        "GROUP BY d.driverId ORDER BY total DESC LIMIT 1"
    )
    team = w.first(
        "SELECT c.name FROM results AS r JOIN races AS ra ON ra.raceId = r.raceId JOIN drivers AS d "
        "ON d.driverId = r.driverId JOIN constructors AS c ON c.constructorId = r.constructorId "
        f"WHERE ra.year = {last} AND d.forename = {_literal(str(champion[0]))} "
        f"AND d.surname = {_literal(str(champion[1]))} LIMIT 1"
    )[0]
    busiest = w.first(
        "SELECT c.name, COUNT(*) FROM races AS ra JOIN circuits AS c ON c.circuitId = ra.circuitId "
        "GROUP BY c.circuitId ORDER BY COUNT(*) DESC, c.circuitId LIMIT 1"
    )
    average_stop = w.number(
        f"SELECT AVG(p.milliseconds) / 1000.0 FROM pitStops AS p JOIN races AS ra ON ra.raceId = p.raceId "
        f"WHERE {where_race}"
    )
    average_finish = w.number(
        f"SELECT AVG(r.position) {_JOIN_RESULTS} WHERE d.surname = 'Alonso' AND ra.year = {last} "
        "AND r.position IS NOT NULL"
    )
    if retired:
        out = retired[0]
        what_if = (
            f"Had {_name(out)} not retired with a {str(out[5]).lower()} problem on lap "
            f"{_as_int(out[4]) + 1} of the {out[2]} {out[3]}, he would have finished on the podium."
        )
    else:
        what_if = f"Had {_name(champion)} started every {last} race from pole, he would have won them all."
    nei, oos, cf, subj = "NOT ENOUGH INFO", "OUT-OF-SCHEMA", "COUNTERFACTUAL", "SUBJECTIVE"
    claims = [
        (
            oos,
            f"{_name(stop)}'s {stop[2]}-second pit stop at the {stop[3]} {stop[4]} was caused by a jammed "
            "wheel nut.",
            "pit stop duration refers to duration; the longest pit stop refers to MAX(milliseconds)",
        ),
        (
            oos,
            f"{_name(fastest)} set the fastest lap of the {year} {race}, a {fastest[2]}, on soft-compound "
            "tyres.",
            f"the fastest lap refers to rank = 1; {_FULL_NAME}",
        ),
        (
            oos,
            f"The {first_win[2]} {first_win[3]}, won by {_name(first_win)}, was run in wet conditions with a "
            "track temperature of 18°C.",
            "won refers to position = 1",
        ),
        (
            oos,
            f"More than 95,000 spectators watched {_name(from_behind)} win the {from_behind[2]} "
            f"{from_behind[3]} from grid position {from_behind[4]}.",
            "won refers to position = 1; grid position refers to grid",
        ),
        (cf, what_if, "retired refers to position is null; podium refers to position <= 3"),
        (
            cf,
            f"If the {first_win[2]} {first_win[3]} had been stopped at half distance for rain, "
            f"{_name(first_win)} would still have won it.",
            "won refers to position = 1",
        ),
        (
            cf,
            f"If {_name(champion)} had driven for Caterham in {last}, he would still have scored more than "
            f"{_number(_as_float(champion[2]) // 2)} points.",
            f"points refers to SUM(points) over the races of the season; {_FULL_NAME}",
        ),
        (
            cf,
            f"If {team} had switched to a one-stop strategy at the {year} {race}, its cars would have "
            "finished first and second.",
            "pit stops refers to pitStops; a one-stop strategy refers to stop = 1",
        ),
        (
            subj,
            f"{_name(champion)}'s {_number(champion[2])}-point {last} season was the most dominant "
            "championship campaign of the era.",
            f"points refers to SUM(points); {_FULL_NAME}",
        ),
        (
            subj,
            f"The {busiest[0]}, which hosted {busiest[1]} Grands Prix between {SEASONS[0]} and {last}, is "
            "the most exciting circuit on the calendar.",
            "hosted refers to races.circuitId",
        ),
        (
            subj,
            f"An average pit stop of about {average_stop:.1f} seconds at the {year} {race} shows that the "
            "pit crews did an impressive job.",
            "average pit stop duration refers to AVG(milliseconds) / 1000",
        ),
        (
            subj,
            f"Fernando Alonso's average finishing position of about {average_finish:.2f} in {last} was a "
            "disappointing return for a driver of his calibre.",
            "finishing position refers to position",
        ),
    ]
    for category, claim, extra_info in claims:
        w.add(nei, claim, extra_info, category=category)


CLAIM_TEMPLATES = (
    _season_top,
    _average_pit_stop,
    _completion_rate,
    _retirements,
    _running_total,
    _fastest_lap,
    _longest_pit_stop,
    _wins,
    _average_finish,
    _constructors_champion,
    _pole,
    _countries,
)
"""Each writes one ENTAILED and one CONTRADICTED claim (in this order: 24 claims)."""


def write_claims(db: Database, path: Path, seed: int) -> list[dict[str, object]]:
    """The sample's claims, written to ``path`` as JSON Lines (and returned)."""
    writer = _ClaimWriter(db, seed)
    for template in CLAIM_TEMPLATES:
        template(writer)
    _not_enough_info(writer)
    lines = [json.dumps(record, ensure_ascii=False) for record in writer.records]
    _write_text(path, "\n".join(lines) + "\n")
    return writer.records


# ---- the entry points ----------------------------------------------------------------------------


def build_sample(out_dir: str | Path, *, schema_dir: str | Path | None = None, seed: int = 7) -> SamplePaths:
    """Write the sample database, its descriptions, a one-database schema folder and the claims
    under ``out_dir`` (created when missing; earlier sample files are replaced).

    ``schema_dir``: the ClaimDB schema folder (``dev_tables.json`` + ``database_description/``,
    e.g. ``../shared/datasets/claimdb/schema``); the tables, columns, keys and descriptions are
    read from it at run time. The same ``seed`` gives the same rows and the same claims file,
    byte for byte. Raises :class:`DatasetError` when the schema folder is missing or does not
    describe BIRD's ``formula_1``."""
    if schema_dir is None:
        raise DatasetError(
            "no schema folder: give schema_dir (the ClaimDB schema folder with dev_tables.json, "
            "e.g. ../shared/datasets/claimdb/schema)"
        )
    if isinstance(seed, bool) or not isinstance(seed, int):
        raise ValueError(f"seed must be an integer, got {seed!r}")
    schema_dir = Path(schema_dir)
    schema = load_schemas(schema_dir).get(DB_ID)
    entry = _raw_entry(schema_dir)
    rows = _Generator(seed).build()
    _check_layout(schema, rows)

    root = Path(out_dir)
    db_folder = root / DB_ID
    try:
        db_folder.mkdir(parents=True, exist_ok=True)
        db_path = db_folder / f"{DB_ID}.sqlite"
        write_database(db_path, schema, rows)
        out_schema = root / "schema"
        for table in schema.tables:
            text = description_csv(table, entry)
            _write_text(db_folder / "database_description" / f"{table.name}.csv", text)
            _write_text(out_schema / "database_description" / DB_ID / f"{table.name}.csv", text)
        _write_text(out_schema / "dev_tables.json", json.dumps([entry], indent=1, ensure_ascii=False) + "\n")
        claims_path = root / "claims.jsonl"
        with connect(db_path) as db:
            write_claims(db, claims_path, seed)
    except OSError as exc:
        raise DatasetError(f"{root}: cannot write the sample ({exc.strerror or exc})") from None
    return SamplePaths(root=root, db_path=db_path, claims_path=claims_path, schema_dir=out_schema)


def main(argv: Sequence[str] | None = None) -> int:
    """``python -m tabverify.claimdb.sample OUT_DIR --schema DIR [--seed N]``: exit 0, or 2 with one
    line on standard error."""
    parser = argparse.ArgumentParser(
        prog="python -m tabverify.claimdb.sample",
        description=f"Write a small {DB_ID} database with the real ClaimDB schema, generated rows and "
        "36 claims with computed answers.",
    )
    parser.add_argument("out_dir", metavar="OUT_DIR", help="folder to write the sample into")
    parser.add_argument(
        "--schema",
        required=True,
        metavar="DIR",
        help="the ClaimDB schema folder (dev_tables.json + descriptions)",
    )
    parser.add_argument("--seed", type=int, default=7, help="random seed of the generated rows (default 7)")
    args = parser.parse_args(argv)
    try:
        paths = build_sample(args.out_dir, schema_dir=args.schema, seed=args.seed)
    except (DatasetError, DatabaseError) as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2
    print(f"database: {paths.db_path}")
    print(f"claims:   {paths.claims_path}")
    print(f"schema:   {paths.schema_dir}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
