"""Renders every case of cases.json with a chat template the way Hugging Face's
apply_chat_template does (jinja2's ImmutableSandboxedEnvironment with trim_blocks and
lstrip_blocks, loopcontrols, raise_exception, a tojson that keeps non-ASCII), for each
add_generation_prompt (true, false) and enable_thinking (undefined, true, false), and
prints the renderings as JSON: {"case/agp=B/think=T": text or "ERROR: message"}.

Usage: python3 render.py TEMPLATE.jinja [CASES.json] > expected.json

CASES.json defaults to cases.json; a case may carry "tools" (OpenAI's shape), passed as
the template's tools.
"""
import json
import sys
from pathlib import Path

import jinja2
import jinja2.ext
from jinja2.sandbox import ImmutableSandboxedEnvironment


def raise_exception(message):
    raise jinja2.exceptions.TemplateError(message)


def tojson(x, ensure_ascii=False, indent=None, separators=None, sort_keys=False):
    return json.dumps(x, ensure_ascii=ensure_ascii, indent=indent, separators=separators, sort_keys=sort_keys)


def main():
    template = Path(sys.argv[1]).read_text()
    cases_file = Path(sys.argv[2]) if len(sys.argv) > 2 else Path(__file__).parent / "cases.json"
    cases = json.loads(cases_file.read_text())
    env = ImmutableSandboxedEnvironment(trim_blocks=True, lstrip_blocks=True, extensions=[jinja2.ext.loopcontrols])
    env.filters["tojson"] = tojson
    env.globals["raise_exception"] = raise_exception
    compiled = env.from_string(template)
    out = {}
    for case in cases:
        for agp in (True, False):
            for think in (None, True, False):
                ctx = {
                    "messages": case["messages"],
                    "add_generation_prompt": agp,
                    "tools": case.get("tools"),
                    "bos_token": "<|endoftext|>",
                    "eos_token": "<|im_end|>",
                }
                if think is not None:
                    ctx["enable_thinking"] = think
                key = "%s/agp=%s/think=%s" % (case["name"], str(agp).lower(), "none" if think is None else str(think).lower())
                try:
                    out[key] = compiled.render(**ctx)
                except Exception as e:
                    out[key] = "ERROR: %s" % e
    json.dump(out, sys.stdout, indent=1, ensure_ascii=False, sort_keys=True)
    sys.stdout.write("\n")


if __name__ == "__main__":
    main()
