"""`python -m llama_cpp.server` with llama.cpp's extra CPU buffer types turned off, as the
`local` provider loads its model (see `agentkit.providers._local._PlainBuffers`: where
llama.cpp was built on a CPU with AMX, its AMX kernels crash on the first decode).

Run as `python tests/providers/llama_server_plain.py --model ... --port ...` with `src` on
PYTHONPATH.
"""

from __future__ import annotations

import runpy
import sys

import llama_cpp.llama as llama_module

from agentkit.providers._local import _PlainBuffers

if __name__ == "__main__":
    vars(llama_module)["llama_cpp"] = _PlainBuffers(vars(llama_module)["llama_cpp"])
    sys.argv[0] = "llama_cpp.server"
    runpy.run_module("llama_cpp.server", run_name="__main__", alter_sys=True)
