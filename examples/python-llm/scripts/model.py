"""A fake paid model: deterministic answers, a price per call by model.
Each call is memoised in cairn's cache, so no call is ever paid twice:
not after an interruption, a budget stop or a forced rerun."""

import hashlib
import re

import cairn

PRICE = {"small-1": 0.005, "large-1": 0.02}


@cairn.memo(version="1")
def complete(model: str, prompt: str) -> dict:
    # A real client would call the API here; this one computes the
    # answer, the small model wrongly once in a while.
    a, b = (int(n) for n in re.findall(r"\d+", prompt)[:2])
    answer = a * b
    if model.startswith("small") and hashlib.sha256(prompt.encode()).digest()[0] % 3 == 0:
        answer += 1
    cairn.report(cost=PRICE[model], iterations=1, model=model)
    return {"model": model, "prompt": prompt, "answer": answer}
