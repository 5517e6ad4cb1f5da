# A sweep: harden a baseline prompt for three models (at most one model
# call at a time, through the "api" pool), evaluate each hardened prompt,
# and collect the scores.
#
#   cairn run                                   # 8 phases
#   cairn run -var-file two-models.vars         # narrower sweep: only the report reruns
#   cairn run --force 'harden["small-2"]'       # one instance, by address

variable "models" {
  type        = set(string)
  default     = ["small-1", "small-2", "small-3"]
  description = "the models to harden the prompt for"
}

experiment "sweep" {
  description = "baseline -> harden (per model) -> evaluate (per model) -> report"
}

pool "api" {
  size = 1
}

phase "baseline" {
  command = "sh scripts/baseline.sh out/baseline.txt"
  inputs  = ["scripts/baseline.sh"]
  outputs = { prompt = "out/baseline.txt" }
}

phase "harden" {
  for_each  = var.models
  command   = "sh scripts/harden.sh ${each.value} ${phase.baseline.outputs.prompt} out/hardened-${each.key}.txt"
  inputs    = ["scripts/harden.sh"]
  outputs   = { prompt = "out/hardened-${each.key}.txt" }
  params    = { model = each.value }
  resources = { api = 1 }
}

phase "evaluate" {
  for_each = phase.harden
  command  = "sh scripts/evaluate.sh ${each.value.outputs.prompt} out/score-${each.key}.txt"
  inputs   = ["scripts/evaluate.sh"]
  outputs  = { score = "out/score-${each.key}.txt" }
}

phase "report" {
  command = "cat ${join(" ", [for k, e in phase.evaluate : e.outputs.score])} > out/report.txt"
  outputs = ["out/report.txt"]
}
