# Part of the RLX project, under the Apache License v2.0 with LLVM Exceptions.
# SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
"""Runs spirv-val (Vulkan 1.1 rules) on every .spv file of argv[1]; prints
`valid: N` and fails on the first invalid binary."""
import pathlib
import subprocess
import sys

files = sorted(pathlib.Path(sys.argv[1]).glob("*.spv"))
for f in files:
    proc = subprocess.run(["spirv-val", "--target-env", "vulkan1.1", str(f)],
                          capture_output=True, text=True)
    if proc.returncode != 0:
        sys.exit(f"{f.name}: {proc.stdout}{proc.stderr}")
print(f"valid: {len(files)}")
