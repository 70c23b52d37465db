#!/usr/bin/env bash
# Train the cross-encoder candidates on a lent GPU machine, in one call (training/README.md,
# "On a GPU"). Reads only the repository: the vendored mixes in training/data/ and the base
# all-MiniLM-L6-v2 carried as .gpu/base (fp16 safetensors, made here by
# `python -m training.carry_base`; fp32 would not fit the device's 64 MiB upload).
# Writes to $OUT: each candidate's int8 ONNX graph, xz-compressed and split in 15 MB parts
# (the device returns files of at most 16 MiB), and logs.tar.gz (train logs, training.json,
# export.json, manifest.json, nvidia-smi).
#
# Candidates, trained at once on the one GPU: CANDIDATES holds one "name data epochs batch lr
# [layers [seed [init_seed]]]" per line (layers: keep the base's first N transformer layers; 0,
# the default, keeps all six; seed: the trainer's --seed, default 20261124, the shipped models'
# seed; init_seed: the trainer's --init-seed, the seed of the new head alone, default the seed).
# SOUP="name run run ..." also averages those runs' weights into one model (training.soup; the
# runs must share data and init_seed), exported as a candidate. RETURN names the graphs that come
# back (default: every candidate and the soup); the device returns at most 8 files, 64 MiB
# together, and a graph takes two. The default is the first run of 2026-11-26
# (training/README.md, "On a GPU"):
#   ent_e4   entailment mix,     4 epochs, batch 64, lr 8e-5
#   ent_e8   entailment mix,     8 epochs, batch 64, lr 5e-5
#   ans_e4   answerability mix,  4 epochs, batch 64, lr 8e-5
set -u
export PYTHONUNBUFFERED=1 TOKENIZERS_PARALLELISM=false
OUT=${OUT:?set OUT}
WORK=${WORK:-/tmp/train}
TRAIN_LIMIT_S=${TRAIN_LIMIT_S:-330}
# The export scores the held-back pairs three times on the CPU (torch fp32, ONNX fp32, int8) and
# writes the graph last: a 4,110-pair set took over 150 s with two exports side by side, and an
# export stopped by the limit returns nothing (2026-11-26, ans_v8a).
EXPORT_LIMIT_S=${EXPORT_LIMIT_S:-240}
DEVICE=${DEVICE:-cuda}
CANDIDATES=${CANDIDATES:-"ent_e4 training/data/entailment 4 64 8e-5
ent_e8 training/data/entailment 8 64 5e-5
ans_e4 training/data/answerability 4 64 8e-5"}
# Smoke runs only (e.g. on a CPU): EXTRA_TRAIN="--limit 256 --heldback-limit 64 --epochs 0.5"
EXTRA_TRAIN=${EXTRA_TRAIN:-}
EXTRA_EXPORT=${EXTRA_EXPORT:-}
SOUP=${SOUP:-}
RETURN=${RETURN:-}
mkdir -p "$WORK/logs"
nvidia-smi >"$WORK/logs/nvidia-smi.txt" 2>&1
python3 -c "import torch, transformers, onnxruntime; print(torch.__version__, transformers.__version__, onnxruntime.__version__, torch.cuda.get_device_name())" | tee "$WORK/logs/versions.txt"

# The carried fp16 base, widened back to fp32 (the trainer also loads it as fp32).
python3 -m training.carry_base --widen .gpu/base --out /tmp/base || exit 1

train() {  # name data epochs batch lr [layers [seed [init_seed]]]
  timeout "$TRAIN_LIMIT_S" python3 -m training.train_entailment --base /tmp/base --device "$DEVICE" \
    --data "$2" --out "$WORK/$1" --epochs "$3" --batch-size "$4" --lr "$5" --threads 4 \
    --layers "${6:-0}" --seed "${7:-20261124}" --init-seed "${8:-${7:-20261124}}" \
    --checkpoint-every 500 $EXTRA_TRAIN >"$WORK/logs/$1.out" 2>&1
  echo "$1 exit $?" >>"$WORK/logs/exits.txt"
}
start=$(date +%s)
while read -r name data epochs batch lr layers seed init; do
  [ -n "$name" ] && train "$name" "$data" "$epochs" "$batch" "$lr" "${layers:-0}" \
    "${seed:-20261124}" "${init:-${seed:-20261124}}" &
done <<<"$CANDIDATES"
wait
echo "training took $(( $(date +%s) - start )) s" | tee -a "$WORK/logs/exits.txt"

EXPORTS=$(printf '%s\n' "$CANDIDATES" | awk 'NF {print $1, $2}')
if [ -n "$SOUP" ]; then  # name run run ...: the runs' final weights averaged, on their data
  read -r soup_name soup_runs <<<"$SOUP"
  first=${soup_runs%% *}
  soup_data=$(printf '%s\n' "$EXPORTS" | awk -v n="$first" '$1 == n {print $2}')
  dirs=()
  for run in $soup_runs; do dirs+=("$WORK/$run/final"); done
  mkdir -p "$WORK/$soup_name"
  python3 -m training.soup "${dirs[@]}" --out "$WORK/$soup_name/final" --data "$soup_data" \
    --threads 4 >"$WORK/logs/$soup_name.out" 2>&1
  echo "$soup_name soup exit $?" >>"$WORK/logs/exits.txt"
  cp "$WORK/logs/$soup_name.out" "$WORK/$soup_name/train.log"
  EXPORTS=$(printf '%s\n%s %s' "$EXPORTS" "$soup_name" "$soup_data")
fi

export_one() {  # name data
  local dir="$WORK/$1"
  local from=(--model "$dir/final")
  if [ ! -d "$dir/final" ]; then  # stopped by the time limit: export its last checkpoint
    from=(--checkpoint "$dir/checkpoint.pt" --base /tmp/base)
    echo "$1 cut short: exported from its last checkpoint" >>"$WORK/logs/exits.txt"
  fi
  timeout "$EXPORT_LIMIT_S" python3 -m training.export_onnx "${from[@]}" --data "$2" \
    --out "$dir/export" --name "$1" --threads 4 $EXTRA_EXPORT >"$WORK/logs/$1.export.out" 2>&1
  echo "$1 export exit $?" >>"$WORK/logs/exits.txt"
  cp "$dir/train.log" "$WORK/logs/$1.train.log" 2>/dev/null
  cp "$dir/final/training.json" "$WORK/logs/$1.training.json" 2>/dev/null
  for f in export.json manifest.json; do cp "$dir/export/$f" "$WORK/logs/$1.$f" 2>/dev/null; done
  if [ -f "$dir/export/model.onnx" ] && { [ -z "$RETURN" ] || [[ " $RETURN " == *" $1 "* ]]; }; then
    xz -T4 --block-size=4MiB -6 -c "$dir/export/model.onnx" | split -b 15000000 -d - "$OUT/$1.onnx.xz."
  fi
}
while read -r name data _; do
  [ -n "$name" ] && export_one "$name" "$data" &
done <<<"$EXPORTS"
wait
tar -czf "$OUT/logs.tar.gz" -C "$WORK" logs
ls -la "$OUT"
cat "$WORK/logs/exits.txt"
grep -h "held-back accuracy" "$WORK"/logs/*.out
