# A four-phase prompt-hardening experiment: prepare the data, optimise a
# baseline prompt on a large model, harden it with two small models, and
# evaluate the hardened prompts against the baseline. The "models" are
# POSIX sh scripts that imitate API calls, so it runs anywhere, offline.

experiment "quickstart" {
  description = "prepare → baseline → harden (two models) → evaluate"
}

variable "large_model" {
  type    = string
  default = "large-1"
}

variable "rounds" {
  type    = number
  default = 3
}

locals {
  small_models = ["small-a", "small-b"]
}

phase "prepare" {
  description = "Clean and deduplicate the raw examples"
  command     = "sh scripts/prepare.sh raw data/clean.jsonl"
  inputs      = ["scripts/prepare.sh", "raw/"]
  outputs     = { data = "data/clean.jsonl" }
}

phase "baseline" {
  description = "Optimise a prompt on the large model (stage 1)"
  command     = "sh scripts/optimize.sh ${var.large_model} ${phase.prepare.outputs.data} out/baseline.json"
  inputs      = ["scripts/optimize.sh", "scripts/model.sh"]
  outputs     = { prompt = "out/baseline.json" }
  params      = { model = var.large_model, rounds = var.rounds }
}

phase "harden_a" {
  description = "Harden the baseline prompt with the first small model (stage 2)"
  command     = "sh scripts/harden.sh ${local.small_models[0]} ${phase.baseline.outputs.prompt} out/hardened-${local.small_models[0]}.json"
  inputs      = ["scripts/harden.sh", "scripts/model.sh"]
  outputs     = { prompt = "out/hardened-${local.small_models[0]}.json" }
  params      = { model = local.small_models[0] }
}

phase "harden_b" {
  description = "Harden the baseline prompt with the second small model (stage 2)"
  command     = "sh scripts/harden.sh ${local.small_models[1]} ${phase.baseline.outputs.prompt} out/hardened-${local.small_models[1]}.json"
  inputs      = ["scripts/harden.sh", "scripts/model.sh"]
  outputs     = { prompt = "out/hardened-${local.small_models[1]}.json" }
  params      = { model = local.small_models[1] }
}

phase "evaluate" {
  description = "Score the baseline and both hardened prompts on the large model (stage 3)"
  command = join(" ", [
    "sh scripts/evaluate.sh", var.large_model, phase.prepare.outputs.data, "out/eval.json",
    phase.baseline.outputs.prompt, phase.harden_a.outputs.prompt, phase.harden_b.outputs.prompt,
  ])
  inputs  = ["scripts/evaluate.sh", "scripts/model.sh"]
  outputs = { metrics = "out/eval.json" }
}
