# A spec written without care for layout.
experiment "e" {
concurrency = 2
  cache {
dir = "c" # the cache
        remote {
url = "s3://bucket/prefix"
token_env="TOKEN"
        }
}
  budget { max_cost = 2 }
}

variable "m" {
type = set(string)
default = ["x", "y"]
validation {
condition = length(var.m) > 0 && alltrue([for v in var.m : v != ""])
error_message = "empty"
}
}

phase "a" { command = "true" }
phase "b" "labelled" {}
empty {}

phase "train" {
  for_each = { for k, v in var.grid : k => v if v.enabled }
  command  = "python train.py --lr ${each.value.lr} > out/${each.key}.log"
  outputs={ log = "out/${each.key}.log", model = "out/${each.key}.pt" }
  depends_on = [phase.a, phase.b]
    resources = {
      gpu = 1 # one device
      mem="4G"
    }
}
