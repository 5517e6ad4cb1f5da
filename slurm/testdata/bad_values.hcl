experiment "x" {
  slurm {
    cpus = "x"
    time = 5
    mem = null
  }
}
phase "a" {
  command = "true"
  slurm {
    qos = 3
    extra_args = "a"
    gres = " "
    account = [1]
    time = -1
  }
}
