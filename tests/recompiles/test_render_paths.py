"""Recompile views show a file under the working directory relative to it; the
records and the HTML tooltips keep the full path."""

from __future__ import annotations

from jaxscope._display import to_html, to_text
from jaxscope._recompiles.watcher import (
    Cause,
    RecompileEvent,
    RecompileEvents,
    RecompileSummary,
    SummaryRow,
)
from jaxscope._records import SourceLoc


def _loc(tmp_path, monkeypatch, line):
    monkeypatch.chdir(tmp_path)
    (tmp_path / "pkg").mkdir()
    file = tmp_path / "pkg" / "train.py"
    file.write_text("x = 1\n")
    return SourceLoc(file=str(file), line=line)


def test_event_and_summary_show_cwd_relative_paths(tmp_path, monkeypatch):
    defined = _loc(tmp_path, monkeypatch, 3)
    call = SourceLoc(file=defined.file, line=9)
    event = RecompileEvent(
        function="step",
        defined_at=defined,
        call_site=call,
        causes=[
            Cause(kind="shape", path="x", before="f32[2]", after="f32[3]", hint=""),
            Cause(  # causes quote files in their text: shown short too
                kind="redefined_function",
                path="step",
                before=f"1 earlier function object(s) from {defined}",
                after="a new function object",
                hint=f"a new step is created at {defined} and jitted again",
            ),
        ],
        seconds=0.01,
    )
    summary = RecompileSummary(
        [
            SummaryRow(
                function="step",
                defined_at=defined,
                calls=2,
                traces=2,
                compiles=2,
                seconds=0.5,
                top_causes=[("shape", 1)],
            )
        ]
    )
    for obj in (event, RecompileEvents([event], title="t"), summary):
        text = to_text(obj, width=300)
        assert defined.file not in text
        assert "pkg/train.py:" in text
        page = to_html(obj)
        assert f'title="{defined.file}:' in page  # the full path in the tooltip
    assert "pkg/train.py:9" in to_text(event, width=300)
    events_text = to_text(RecompileEvents([event], title="t"), width=300)
    assert "from pkg/train.py:3 →" in events_text
    assert "hint: a new step is created at pkg/train.py:3 and" in events_text
    assert "created at pkg/train.py:3 and" in to_html(event)
    assert "pkg/train.py:3" in to_text(summary, width=300)
    assert event.defined_at == defined  # the data keeps the full path
    assert str(defined) in event.causes[1].hint
