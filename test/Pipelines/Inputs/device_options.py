# Part of the RLX project, under the Apache License v2.0 with LLVM Exceptions.
# SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
"""Runs `rlx-opt <args...> --rlx-gpu-pipeline=<options>` with the options
that describe the Vulkan device the Session selects (rlx-vulkan-probe's
`selected:` line) as VulkanBackend derives them, so rlx-opt compiles for
the same device.

    device_options.py rlx-vulkan-probe rlx-opt input.mlir -o out.mlir
"""
import re
import subprocess
import sys

out = subprocess.run([sys.argv[1]], capture_output=True, text=True,
                     check=True).stdout
lines = out.splitlines()
selected = next(l for l in lines if l.startswith("selected: "))[10:]
dev = next(l for l in lines if re.match(r"\d+: ", l) and selected in l)
def num(key):
    return int(re.search(key + r"=(\d+)", dev).group(1))
align = max(4, 1 << (num("minStorageBufferOffsetAlignment") - 1).bit_length())
invocations = num("maxComputeWorkGroupInvocations")
flags = dev.split(") ")[-1].split()
options = (f"storage-buffer-alignment={align} "
      f"max-workgroup-invocations={invocations} "
      f"max-shared-memory={num('maxComputeSharedMemorySize')} "
      f"workgroup-size={min(64, invocations)} "
      f"int64={'true' if 'int64' in flags else 'false'} "
      f"int8={'true' if 'int8' in flags else 'false'} "
      f"float16={'true' if 'float16' in flags else 'false'}")
sys.exit(subprocess.run(sys.argv[2:] + [f"--rlx-gpu-pipeline={options}"])
         .returncode)
