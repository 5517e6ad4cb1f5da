# A paid-API experiment in miniature: ten questions to a fake "model" that
# charges 0.05 per call. It shows the phase budget stopping a phase, the
# run budget stopping the run, and cairn memo plus the spending ledger
# making a resumed run pay only for the calls it had not made.
#
#   cairn run                                  # answer stops over budget after 7 calls
#   cairn resume -var call_budget=1            # 7 calls replayed free, 3 paid; run budget spent
#   cairn resume -var call_budget=1 -var run_budget=1   # score runs; nothing paid again

variable "call_budget" {
  default     = 0.3
  description = "max_cost of the answer phase"
}

variable "run_budget" {
  default     = 0.45
  description = "max_cost of the whole run, resumed runs included"
}

experiment "llm-budget" {
  description = "ask a fake paid model ten questions, within a budget"
  budget {
    max_cost = var.run_budget
  }
}

phase "questions" {
  command = "sh scripts/questions.sh data/questions.txt"
  inputs  = ["scripts/questions.sh"]
  outputs = { questions = "data/questions.txt" }
}

phase "answer" {
  command = "sh scripts/answer.sh ${phase.questions.outputs.questions} out/answers.txt"
  inputs  = ["scripts/answer.sh", "scripts/model.sh"]
  outputs = { answers = "out/answers.txt" }
  params  = { model = "large-1" }
  budget {
    max_cost = var.call_budget
    timeout  = "10m"
  }
}

phase "score" {
  command = "sh scripts/score.sh ${phase.answer.outputs.answers} out/score.txt"
  inputs  = ["scripts/score.sh"]
  outputs = { score = "out/score.txt" }
}
