"""questions.py OUT: write the questions the models are asked."""

import json
import sys
from pathlib import Path

out = Path(sys.argv[1])
out.parent.mkdir(parents=True, exist_ok=True)
out.write_text(json.dumps([f"What is {a} times {a + 3}?" for a in range(1, 11)], indent=1) + "\n")
