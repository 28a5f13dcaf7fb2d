"""What a learner writes survives a real kernel restart: forecasts and triage records,
in the learner store and as a saved JSON file."""

import json

import pytest

jupyter_client = pytest.importorskip("jupyter_client")


def _run(client, code: str) -> str:
    out = []
    reply = client.execute_interactive(
        code,
        timeout=120,
        output_hook=lambda msg: (
            out.append(msg["content"].get("text", "")) if msg["msg_type"] == "stream" else None
        ),
    )
    assert reply["content"]["status"] == "ok", reply["content"]
    return "".join(out)


@pytest.mark.slow
def test_forecast_history_and_triage_record_survive_a_kernel_restart(tmp_path):
    km, kc = jupyter_client.manager.start_new_kernel(kernel_name="python3")
    try:
        setup = f"""
import os
os.environ["LABKIT_HOME"] = {str(tmp_path)!r}
import labkit
from labkit.forecast.history import ForecastHistory
"""
        _run(
            kc,
            setup
            + """
f = labkit.Forecast([(0, 2.3), (40, 2.3)], shape="flat").seal(labkit.Config(steps=50), bug="zero_lr")
ForecastHistory().add(f, f.score(labkit.train(bug="zero_lr", steps=50)))
rec = labkit.TriageRecord("restart test")
rec.plan_intervention({"lr": 0.0}, {"lr": 0.1}, "loss < 1.0 by step 150")
rec.save(os.path.join(os.environ["LABKIT_HOME"], "triage.json"))
rec.keep()
print(f.content_hash)
""",
        )
        km.restart_kernel(now=True)
        kc.wait_for_ready(timeout=60)
        after = _run(
            kc,
            setup
            + """
import json
h = ForecastHistory()
rec = labkit.TriageRecord.load(os.path.join(os.environ["LABKIT_HOME"], "triage.json"))
from labkit.store.learner import default_store
kept = labkit.TriageRecord.kept()
print(json.dumps({"n": len(h), "intact": h.forecasts()[0].is_intact(),
                  "score": h.entries()[0]["score"]["shape_actual"],
                  "forecast": rec.forecast.text, "sealed": rec.forecast.intact(),
                  "kept": [k.forecast.text for k in kept]}))
""",
        )
        state = json.loads(after.strip().splitlines()[-1])
        assert state == {
            "n": 1,
            "intact": True,
            "score": "flat",
            "forecast": "loss < 1.0 by step 150",
            "sealed": True,
            "kept": ["loss < 1.0 by step 150"],
        }
    finally:
        kc.stop_channels()
        km.shutdown_kernel(now=True)
