"""Class mode under load: a teacher and 120 students' phones following on `make serve WORKERS=2`.

tests/load/class_load.py (`make load CLASS=1 SESSIONS=120`) starts `scripts/serve.py
--workers 2` and drives a teacher and S students as websocket sessions speaking Streamlit's
protocol: the teacher starts a class and clicks Next through the lesson's first steps, reveals
each question after the students had time to answer; each student polls the class as the
browser's `st.fragment(run_every=...)` timer does, follows, reads 3-12 s and taps an answer.
Measured: from the teacher's Next being sent to the student's page on the new step (its first
message: the step's line and address; and its whole page drawn), and from a tap sent to the
answer accepted. Goals: p95 follow <= 2 s, p95 answer <= 1 s, no errors. Per step: the
follow, and the workers' CPU seconds from the Next to the last student on the step, per
student who followed (the other students' checks in that time included).

    python -m benchmarks.bench_class_mode [students]    (default 120)
"""

from __future__ import annotations

import json
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
from benchmarks.report import Table, show  # noqa: E402
from tests.load import class_load  # noqa: E402

COST = ("It starts `make serve`'s cluster (2 workers, Debian's nginx) and 121 websocket "
        "sessions for about four minutes.")


def main() -> list[Table]:
    students = int(sys.argv[1]) if len(sys.argv) > 1 else 120
    out = ROOT / "test-output" / "class_load.json"
    code = class_load.main(["--students", str(students), "--json", str(out)])
    r = json.loads(out.read_text())

    def row(name: str, key: str, goal: str) -> list:
        s = r[key]
        return [name, s["n"], s["p50_s"], s["p95_s"], s["max_s"], goal]

    latency = Table(
        ["measured", "n", "p50 (s)", "p95 (s)", "max (s)", "goal (p95)"],
        [row("teacher's Next -> student's page on the new step (first message)", "follow",
             "<= 2 s"),
         row("teacher's Next -> student's new step drawn whole", "follow_drawn", ""),
         row("a student's tap -> answer accepted", "answer", "<= 1 s")],
        f"{students} students and a teacher, 2 workers behind nginx ({r['machine']})",
        f"Students per worker: {r['students_per_worker']}; errors: {r['n_errors']}; the class "
        f"took {r['class_seconds']} s; the load client ran on the same cores. "
        + ("Every goal met." if code == 0 else "Not every goal met (see the rows)."))
    cpu = r.get("follow_burst_cpu", {})
    steps = Table(
        ["step", "follows", "p50 (s)", "p95 (s)", "workers' CPU to the last follow (s)",
         "per follow (ms)"],
        [[k, v["n"], v["p50_s"], v["p95_s"], cpu.get(k, {}).get("cpu_s", ""),
          cpu.get(k, {}).get("per_follow_ms", "")]
         for k, v in r.get("follow_by_step", {}).items()],
        "Each of the teacher's steps",
        f"The workers used {r.get('workers_cpu_s')} CPU s over the class; the load client "
        f"{r.get('load_client_cpu_s')} CPU s.")
    return show(latency, steps)


if __name__ == "__main__":
    main()
