# The end-to-end tests build their models with the importer tests' helpers.
import os
import sys

sys.path.insert(0, os.path.join(os.path.dirname(__file__), os.pardir, "frontend"))
