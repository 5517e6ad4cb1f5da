"""answer.py QUESTIONS OUT: ask the phase's model (params.model) every
question. Before each call it checks what is left of the phase budget
and stops, failing, rather than start a call it cannot pay for; the calls
already made are replayed free on the rerun."""

import json
import sys
from pathlib import Path

import cairn
from model import PRICE, complete

questions, out = sys.argv[1], Path(sys.argv[2])
model = cairn.params()["model"]
answers = []
for q in json.loads(Path(questions).read_text()):
    left = cairn.budget().cost_left
    if left is not None and left < PRICE[model]:
        sys.exit(f"{model}: {left} left of the budget, a call costs {PRICE[model]}: stopping after {len(answers)} answers")
    answers.append(complete(model, q))
out.parent.mkdir(parents=True, exist_ok=True)
out.write_text(json.dumps(answers, indent=1) + "\n")
