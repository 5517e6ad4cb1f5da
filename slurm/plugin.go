package slurm

import "github.com/cairn-run/cairn/executor"

// Plugin makes the Slurm executor known to the registry: executor =
// "slurm" in a spec, --executor slurm.
var Plugin = executor.Plugin{
	Name:    "slurm",
	Summary: "submit with sbatch",
	Decode:  decodeBlock,
	JobEnv:  "SLURM_JOB_ID",
	New: func(env executor.Env) (executor.Executor, error) {
		o, err := OptionsFromEnv()
		if err != nil {
			return nil, err
		}
		o.Warn = env.Warn
		return New(o), nil
	},
}
