# A paid-model sweep written in Python: ask two fake paid models ten
# questions each, within a budget, every call memoised with @cairn.memo,
# then score the answers. The phases import the cairn module from this
# repository (PYTHONPATH below); an installed one (pip install ./python)
# works the same.
#
#   cairn run                     # the small model stops at 8 calls: its budget is spent
#   cairn run -var small_budget=1 # only the small model's 2 missing calls are paid
#   cairn run --force 'answer["large-1"]'   # its 10 calls replayed, nothing paid

variable "models" {
  type        = set(string)
  default     = ["small-1", "large-1"]
  description = "the models to ask"
}

variable "small_budget" {
  default     = 0.04
  description = "max_cost of the small model's answer phase"
}

experiment "python-llm" {
  description = "questions -> answer (per model, paid, memoised) -> score"
  budget {
    max_cost = 2
  }
}

phase "questions" {
  command = "python3 scripts/questions.py data/questions.json"
  inputs  = ["scripts/questions.py"]
  outputs = { questions = "data/questions.json" }
  env     = { PYTHONPATH = "../../python" }
}

phase "answer" {
  for_each = var.models
  command  = "python3 scripts/answer.py ${phase.questions.outputs.questions} out/answers-${each.key}.json"
  inputs   = ["scripts/answer.py", "scripts/model.py"]
  outputs  = { answers = "out/answers-${each.key}.json" }
  params   = { model = each.value }
  env      = { PYTHONPATH = "../../python" }
  budget {
    max_cost = each.value == "small-1" ? var.small_budget : 1
  }
}

phase "score" {
  command = "python3 scripts/score.py out/score.txt ${join(" ", [for k, a in phase.answer : a.outputs.answers])}"
  inputs  = ["scripts/score.py"]
  outputs = ["out/score.txt"]
  env     = { PYTHONPATH = "../../python" }
}
