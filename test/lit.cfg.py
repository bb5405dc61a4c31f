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
# `not` and `count` at the start of a RUN line are found on PATH.
llvm_config.with_environment("PATH", config.llvm_tools_dir, append_path=True)

tool_dirs = [config.rlx_tools_dir, config.llvm_tools_dir]
tools = [ToolSubst("rlx-opt", unresolved="ignore"),
         ToolSubst("rlx-run", unresolved="ignore"),
         ToolSubst("rlx-exec", unresolved="ignore"),
         ToolSubst("rlx-bench", unresolved="ignore")]
llvm_config.add_tool_substitutions(tools, tool_dirs)
