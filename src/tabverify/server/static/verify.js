// The verify page: "Run program" re-runs an edited program through /api/program/run and updates
// that verdict's value, SQL and highlighted cells in place. Without this script the button posts
// the form and the server renders the result, so the page works either way.
"use strict";

(function () {
  const form = document.getElementById("verify-form");
  if (!form) return;

  // The table the form names, as /api/program/run takes it (the same choice the server makes:
  // a database table when one is picked, else the text box, which holds an uploaded table too).
  function tableSource() {
    const database = form.querySelector("#database");
    if (database && database.value) {
      return { database: database.value, table_name: form.querySelector("#table_name").value };
    }
    const number = parseInt(form.querySelector("#number").value, 10);
    return {
      text: form.querySelector("#text").value,
      format: form.querySelector("#format").value,
      number: number > 0 ? number : 1,
    };
  }

  function show(section, message, failed) {
    const status = section.querySelector(".run-status");
    status.textContent = message;
    status.classList.toggle("failed", failed);
  }

  async function rerun(section) {
    const program = section.querySelector(".program-box").value;
    show(section, "running...", false);
    let response;
    try {
      response = await fetch("/api/program/run", {
        method: "POST",
        headers: { "content-type": "application/json" },
        body: JSON.stringify(Object.assign(tableSource(), { program: program })),
      });
    } catch (error) {
      show(section, "the server could not be reached: " + error, true);
      return;
    }
    const answer = await response.json().catch(() => null);
    if (!response.ok || answer === null) {
      const message = answer && answer.error ? answer.error.message : "HTTP " + response.status;
      show(section, message, true);
      return;
    }
    // textContent, never innerHTML: cell texts and values are user data
    section.querySelectorAll(".value").forEach((node) => { node.textContent = answer.display; });
    const program_code = section.querySelector("code.program");
    if (program_code) program_code.textContent = answer.program;
    const sql = section.querySelector(".sql");
    if (sql) {
      sql.hidden = !answer.sql;
      sql.querySelector("code").textContent = answer.sql || "";
    }
    const wanted = new Set(answer.evidence.map((cell) => cell.row + ":" + cell.column));
    let shown = 0;
    section.querySelectorAll("td[data-row]").forEach((cell) => {
      const hit = wanted.has(cell.dataset.row + ":" + cell.dataset.col);
      cell.classList.toggle("evidence", hit);
      if (hit) shown += 1;
    });
    const hidden = wanted.size - shown;
    show(section, "ran: " + answer.program + " = " + answer.display +
      (hidden > 0 ? " (" + hidden + " evidence cells are in rows not shown)" : ""), false);
  }

  form.addEventListener("click", (event) => {
    const button = event.target.closest("button.rerun");
    if (!button) return;
    event.preventDefault();
    rerun(button.closest("section.verdict"));
  });
})();
