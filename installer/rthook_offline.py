# PyInstaller runtime hook: runs before any application import in the frozen bundle.
#
# The bundle ships its models, so the Hugging Face libraries must never look for them on
# the Hub (they would try to reach huggingface.co for a repo id, or phone home for
# telemetry). The app's own, explicit download path uses `requests` and is unaffected.
import os

for _name, _value in (
    ("HF_HUB_OFFLINE", "1"),
    ("TRANSFORMERS_OFFLINE", "1"),
    ("HF_HUB_DISABLE_TELEMETRY", "1"),
    ("HF_DATASETS_OFFLINE", "1"),
    ("TOKENIZERS_PARALLELISM", "false"),
):
    os.environ.setdefault(_name, _value)
