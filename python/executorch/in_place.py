"""`python in_place.py ROUTE PTE WEIGHTS INPUTS OUT`: in a fresh process,
loads the program PTE with its weights (ROUTE `hurray`: the Hurray file
WEIGHTS through hurray.executorch; ROUTE `official`: the .ptd file WEIGHTS
through ExecuTorch's Runtime), runs `forward` once on the tensors saved in
INPUTS, saves the outputs to OUT and prints, as JSON, how much anonymous and
file-backed memory (RssAnon, RssFile of /proc/self/status) loading and
running added."""

import json
import sys

import torch


def rss():
    fields = {}
    with open("/proc/self/status") as f:
        for line in f:
            key, _, value = line.partition(":")
            if key in ("RssAnon", "RssFile"):
                fields[key] = int(value.split()[0]) * 1024
    return fields


def main(route, pte, weights, inputs, out):
    inputs = torch.load(inputs)
    if route == "hurray":
        import hurray.executorch as hx

        hx._bridge()  # compiled and loaded before the baseline: code, not data
        before = rss()
        program = hx.load_program(pte, weights=weights)
        outputs = program.forward(*inputs)
    else:
        from executorch.runtime import Runtime

        runtime = Runtime.get()
        before = rss()
        program = runtime.load_program(pte, data_path=weights)
        outputs = list(program.load_method("forward").execute(list(inputs)))
    after = rss()  # the program (and the file's mapping) still alive
    del program
    torch.save([o.clone() for o in outputs], out)
    print(json.dumps({k: after[k] - before[k] for k in after}))


if __name__ == "__main__":
    main(*sys.argv[1:])
