"""score.py OUT ANSWERS...: the share of right answers of each model."""

import json
import re
import sys
from pathlib import Path

lines = []
for path in sys.argv[2:]:
    answers = json.loads(Path(path).read_text())
    right = 0
    for a in answers:
        x, y = (int(n) for n in re.findall(r"\d+", a["prompt"])[:2])
        right += a["answer"] == x * y
    lines.append(f"{answers[0]['model']}: {right}/{len(answers)} right")
Path(sys.argv[1]).write_text("\n".join(sorted(lines)) + "\n")
