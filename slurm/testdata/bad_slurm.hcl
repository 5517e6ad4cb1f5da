experiment "x" {
  executor = "kubernetes" # ERROR: Unknown executor
}

phase "a" {
  command  = "true"
  executor = "slurmm" # ERROR: Unknown executor
  slurm {
    cpus       = 0               # ERROR: Invalid slurm.cpus
    mem        = "lots"          # ERROR: Invalid slurm.mem
    time       = "soon"          # ERROR: Invalid slurm.time
    partition  = "two words"     # ERROR: Invalid slurm.partition
    extra_args = ["constraint"]  # ERROR: Invalid slurm.extra_args
    nodes      = 2               # ERROR: Unsupported argument
  }
}

phase "b" {
  command = "true"
  slurm {}
  slurm {} # ERROR: Duplicate slurm block
}
