# No test reads the user's tuning database: `atvoss compile` and `atvoss run`
# take it by default when it exists. Tests that tune name their own.
import os

os.environ["ATVOSS_TUNING_DB"] = os.path.join(os.path.dirname(__file__), "no-such-tuning.db")
