#!/usr/bin/env bash
# The main job, on a fresh machine: set up, build, make small random-weight
# LLaMA and BERT checkpoints with transformers, compile and run them with
# RLX (fusion summary, arena, generated tokens, timings), and check parity
# with the transformers reference.
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/setup.sh >/dev/null
BUILD=${RLX_BUILD_DIR:-build}
cmake -S . -B "$BUILD" -G Ninja -DCMAKE_BUILD_TYPE=Release >/dev/null
cmake --build "$BUILD" --target rlx-run >/dev/null
PY=.venv/bin/python
DEMO="$BUILD/demo"
RUN="$BUILD/bin/rlx-run"
export HF_HUB_OFFLINE=1 TRANSFORMERS_VERBOSITY=error HF_HUB_DISABLE_PROGRESS_BARS=1 TQDM_DISABLE=1

echo "== making small random-weight checkpoints in $DEMO"
$PY scripts/make_tiny_models.py "$DEMO" --kind llama --seed 7 >/dev/null
$PY scripts/make_tiny_models.py "$DEMO" --kind llama --seed 7 --name llama-q8_0 \
  --gguf --gguf-type q8_0 >/dev/null
$PY scripts/make_tiny_models.py "$DEMO" --kind bert --seed 7 >/dev/null

PROMPT=1,15,42,7,99,3
echo
echo "== LLaMA: compile, generate 16 tokens (greedy)"
"$RUN" --model "$DEMO/llama" --prompt-ids $PROMPT --max-new-tokens 16 \
  --logits-out "$DEMO/llama-logits.npy" --step-logits-out "$DEMO/llama-steps.npy" \
  | tee "$DEMO/llama.txt"
TOKENS=$(sed -n 's/^tokens: //p' "$DEMO/llama.txt" | tr ' ' ',')
echo "-- parity with transformers"
$PY scripts/parity.py "$DEMO/llama" --prompt-ids $PROMPT --logits "$DEMO/llama-logits.npy" \
  --tokens "$TOKENS" --step-logits "$DEMO/llama-steps.npy"

echo
echo "== LLaMA as a q8_0 GGUF, weights kept as stored down to the kernels"
"$RUN" --model "$DEMO/llama-q8_0.gguf" --prompt-ids $PROMPT --max-new-tokens 16 \
  --weights-as stored | tee "$DEMO/llama-q8_0.txt" | grep -E "^(model|compiled|tokens|prefill)"
Q8_TOKENS=$(sed -n 's/^tokens: //p' "$DEMO/llama-q8_0.txt" | tr ' ' ',')
echo "-- params are the q8_0 blocks (about a quarter of the f32 model's above);"
if [ "$Q8_TOKENS" = "$TOKENS" ]; then
  echo "   greedy tokens identical to the f32 model's"
else
  echo "   greedy tokens differ from the f32 model's at q8_0 precision: $Q8_TOKENS"
fi

echo
echo "== BERT: compile and encode (hidden states + mean-pooled embedding)"
"$RUN" --model "$DEMO/bert" --prompt-ids $PROMPT --output-dir "$DEMO/bert-out"
echo "-- parity with transformers"
$PY scripts/parity.py "$DEMO/bert" --prompt-ids $PROMPT \
  --hidden "$DEMO/bert-out/last_hidden_state.npy" \
  --embedding "$DEMO/bert-out/sentence_embedding.npy"
