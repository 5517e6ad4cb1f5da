variable "rounds" {
  default = 0
  validation {
    condition     = var.rounds > 0 # ERROR: Invalid value for variable
    error_message = "rounds must be positive."
  }
}

variable "other" {
  default = 1
  validation {
    condition     = var.rounds > var.other # ERROR: Invalid validation condition
    error_message = "no."
  }
}

variable "secret" {
  sensitive = "maybe" # ERROR: Invalid value for sensitive
  default   = "x"
  validatoin { # ERROR: Unsupported block type
  }
}
