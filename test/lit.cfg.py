# -*- Python -*-
# Part of the RLX project, under the Apache License v2.0 with LLVM Exceptions.
# SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception

import os

import lit.formats
from lit.llvm import llvm_config
from lit.llvm.subst import ToolSubst

config.name = "RLX"
config.test_format = lit.formats.ShTest(not llvm_config.use_lit_shell)
config.suffixes = [".mlir", ".toml", ".test"]
config.excludes = ["CMakeLists.txt", "README.md", "lit.cfg.py", "lit.site.cfg.py",
                   "Inputs"]
config.test_source_root = os.path.dirname(__file__)
config.test_exec_root = os.path.join(config.rlx_obj_root, "test")

config.substitutions.append(("%PATH%", config.environment["PATH"]))
config.substitutions.append(("%rlx_src", config.rlx_src_root))
config.substitutions.append(("%python", config.python_executable))
config.substitutions.append(("%rlx_tools", config.rlx_tools_dir))

llvm_config.with_system_environment(["HOME", "TMP", "TEMP", "XDG_RUNTIME_DIR",
                                     "OPENBLAS_CORETYPE", "VK_ICD_FILENAMES"])
llvm_config.use_default_substitutions()
# Tests see what the compiler does, not what an earlier run left in the
# compile cache (tests of the cache pass --cache-dir).
config.environment["RLX_NO_CACHE"] = "1"
# `not` and `count` at the start of a RUN line are found on PATH.
llvm_config.with_environment("PATH", config.llvm_tools_dir, append_path=True)

tool_dirs = [config.rlx_tools_dir, config.llvm_tools_dir]
tools = [ToolSubst("rlx-opt", unresolved="ignore"),
         ToolSubst("rlx-run", unresolved="ignore"),
         ToolSubst("rlx-exec", unresolved="ignore"),
         ToolSubst("rlx-bench", unresolved="ignore"),
         ToolSubst("rlx-tokenize", unresolved="ignore"),
         # LLVM's, for the documented one-liners (docs/rlx-opt.md).
         ToolSubst("mlir-translate", unresolved="ignore"),
         ToolSubst("llc", unresolved="ignore")]
llvm_config.add_tool_substitutions(tools, tool_dirs)

# `spirv-val`: SPIR-V Tools are installed (the SPIR-V lit tests validate
# every binary). `vulkan`: rlx-vulkan-probe opens a Vulkan device (Mesa's
# lavapipe in CI). With RLX_REQUIRE_VULKAN=1 a missing device is an error,
# so that CI never skips the Vulkan tests silently.
import shutil
import subprocess

if shutil.which("spirv-val"):
    config.available_features.add("spirv-val")
# `vulkan-validation`: the Khronos validation layer (vulkan-validationlayers).
for layer_dir in ["/usr/share/vulkan/explicit_layer.d",
                  "/usr/local/share/vulkan/explicit_layer.d",
                  "/etc/vulkan/explicit_layer.d"]:
    if os.path.exists(os.path.join(layer_dir,
                                   "VkLayer_khronos_validation.json")):
        config.available_features.add("vulkan-validation")
probe = os.path.join(config.rlx_tools_dir, "rlx-vulkan-probe")
vulkan_why = "rlx-vulkan-probe is not built"
if os.path.exists(probe):
    env = dict(os.environ)
    proc = subprocess.run([probe], capture_output=True, text=True, env=env)
    vulkan_why = (proc.stdout + proc.stderr).strip()
    if proc.returncode == 0:
        config.available_features.add("vulkan")
if "vulkan" not in config.available_features:
    if os.environ.get("RLX_REQUIRE_VULKAN") == "1":
        lit_config.fatal("RLX_REQUIRE_VULKAN=1 but no Vulkan device: " +
                         vulkan_why)
    lit_config.note("Vulkan tests unsupported: " + vulkan_why)
llvm_config.with_system_environment(["RLX_VULKAN_DEVICE", "RLX_REQUIRE_VULKAN"])

