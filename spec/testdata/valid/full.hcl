experiment "full" {
  description = "every foundation attribute"
  concurrency = 2
  cache {
    dir = "cache-here"
  }
}

variable "model" {
  type        = string
  default     = "m1"
  description = "the model"
}

variable "rounds" {
  default = 3
}

locals {
  prefix = "out/${var.model}"
  name   = upper(local.prefix)
}

phase "prepare" {
  description = "prepare"
  command     = ["sh", "scripts/prepare.sh", "raw"]
  inputs      = ["scripts/prepare.sh", "raw/", "extra/**/*.csv"]
  outputs     = { data = "data/clean.jsonl", stats = "data/stats.json" }
}

phase "train" {
  command    = "sh train.sh ${phase.prepare.outputs.data} ${local.prefix}.bin"
  outputs    = ["${local.prefix}.bin"]
  params     = { model = var.model, rounds = var.rounds, nested = { a = 1, b = [true, "x"] } }
  env        = { SEED = 42, MODE = "fast" }
  secret_env = ["API_KEY"]
  pass_env   = ["CUDA_VISIBLE_DEVICES"]
  workdir    = "."
}

phase "report" {
  command    = "cat ${phase.train.outputs[0]} > report.txt"
  inputs     = ["data/stats.json"]
  outputs    = ["report.txt"]
  depends_on = [phase.prepare]
  cache      = false
}
