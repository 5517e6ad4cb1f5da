# model.sh: a stand-in for a paid model API. Source it, then call
#   model_call MODEL PROMPT
# which prints a deterministic "completion" derived from the model name and
# the prompt, after a short pause that imitates network latency.
model_call() {
	sleep 0.1
	printf '%s|%s' "$1" "$2" | cksum | cut -d' ' -f1
}
