import sys
from pathlib import Path

# The broker and pipeline helpers live with the tests: reused, not copied.
sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "tests"))

from bench.cli import main

raise SystemExit(main())
