"""ui.progress: a long computation's bar is redrawn at most every EVERY_S seconds."""

from attnviz.ui import progress


def test_throttled_passes_on_at_most_one_report_per_interval():
    now = [100.0]
    seen = []
    report = progress.throttled(lambda f, msg: seen.append((f, msg)), every_s=0.1,
                                clock=lambda: now[0])
    report(0.1, "a")  # the bar was drawn empty just now
    now[0] += 0.05
    report(0.2, "b")
    now[0] += 0.06  # 0.11 s since the start
    report(0.3, "c")
    report(0.4, "d")
    now[0] += 0.12
    report(0.5, "e")
    assert seen == [(0.3, "c"), (0.5, "e")]


class FakeBar:
    def __init__(self) -> None:
        self.calls: list[tuple] = []

    def progress(self, value, text=None) -> None:
        self.calls.append(("progress", value, text))

    def empty(self) -> None:
        self.calls.append(("empty",))


def test_a_burst_of_reports_redraws_the_bar_once(monkeypatch):
    """Integrated gradients report all their path points at once after the batch that computes
    them: one redraw (the first report past the interval), not 26."""
    bars: list[FakeBar] = []

    def fake_progress(value, text=None):
        bars.append(FakeBar())
        return bars[-1]

    now = [50.0]
    monkeypatch.setattr(progress.st, "progress", fake_progress)
    monkeypatch.setattr(progress, "CLOCK", lambda: now[0])

    def compute(report):
        now[0] += 1.5 * progress.EVERY_S  # the batch
        for k in range(26):
            report((k + 1) / 26, f"step {k + 1} of 26")
        return "done"

    key = ("test_progress_burst", id(now))
    assert progress.with_progress("results", key, "IG", compute) == "done"
    (bar,) = bars
    assert bar.calls == [("progress", 1 / 26, "IG step 1 of 26"), ("empty",)]
