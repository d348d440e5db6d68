import os
import sys

sys.path.insert(0, os.path.dirname(__file__))  # the project's own packages, as a user's layout has them
