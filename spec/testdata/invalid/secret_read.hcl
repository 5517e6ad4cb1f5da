# A secret_env variable read with env() would put its value into phase
# keys, the cache and the spec memo: refused at the secret_env attribute,
# once per phase block, whoever reads it (the phase, another phase, a
# local).
locals {
  shared = env("SHARED_TOKEN")
}

phase "direct" {
  command    = "echo ${env("API_KEY")} > a.txt"
  secret_env = ["API_KEY"] # ERROR: Secret read into the spec
  outputs    = ["a.txt"]
}

phase "sweep" {
  for_each   = toset(["x", "y"])
  command    = "echo ${each.key} > ${each.key}.txt"
  secret_env = ["OTHER_TOKEN", "SHARED_TOKEN"] # ERROR: Secret read into the spec
  outputs    = ["${each.key}.txt"]
}

phase "reader" {
  command = "echo ${env("OTHER_TOKEN")} ${local.shared} > r.txt"
  outputs = ["r.txt"]
}

phase "fine" {
  command    = "echo \"$PLAIN\" > f.txt"
  secret_env = ["PLAIN"]
  outputs    = ["f.txt"]
}

# A sweep over nothing still declares its secrets.
phase "empty_sweep" {
  for_each   = toset([])
  command    = "echo ${each.key} > e-${each.key}.txt"
  secret_env = ["EMPTY_SWEEP_TOKEN"] # ERROR: Secret read into the spec
  outputs    = ["e-${each.key}.txt"]
}

phase "empty_reader" {
  command = "echo ${env("EMPTY_SWEEP_TOKEN")} > er.txt"
  outputs = ["er.txt"]
}
