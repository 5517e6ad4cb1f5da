experiment "x" {
  budget {
    max_cost = -1 # ERROR: Invalid budget.max_cost
  }
}

phase "a" {
  command = "true"
  budget {
    timeout        = "soon" # ERROR: Invalid budget.timeout
    retries        = -2 # ERROR: Invalid retries
    max_iteration  = 3 # ERROR: Unsupported argument
  }
  budget { # ERROR: Duplicate budget block
  }
}
