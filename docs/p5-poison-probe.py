# Prototype for P5's strict mode: dummies of proxied calls get sizes made of
# fresh symbols no input binds; see which capture sites read them.
import torch, traceback, sys
from torch._dynamo import compiled_autograd as ca
from torch.fx.experimental.symbolic_shapes import DimDynamic
from torch._dynamo.source import ConstantSource
n = [0]
def poisoned_dummy(self, metadata):
    if metadata is None:
        return None
    layout, device, dtype, size, _ = metadata
    syms = []
    for d in size:
        n[0] += 1
        syms.append(self.shape_env.create_unspecified_symint_and_symbol(
            1000 + n[0], ConstantSource(f"poison{n[0]}"), DimDynamic.DYNAMIC))
    return torch.empty(syms, dtype=dtype, layout=layout, device=device)
ca.AutogradCompilerInstance._dummy_output = poisoned_dummy
case = sys.argv[1]
def run():
    if case == "mlp":
        m = torch.nn.Sequential(torch.nn.Linear(4, 4), torch.nn.ReLU(), torch.nn.Linear(4, 4))
        m(torch.randn(2, 4)).sum().backward()
    elif case == "twice":
        x = torch.randn(3, 4, requires_grad=True)
        (x.sin() * x.cos()).sum().backward()
    elif case == "copyslices":
        x = torch.randn(3, 4, requires_grad=True)
        y = x.clone(); y[:, 1].mul_(2); y.sum().backward()
with ca._enable(lambda gm: gm):
    try:
        run(); print(case, "OK: no metadata read of a dummy")
    except Exception as e:
        tb = traceback.format_exc().splitlines()
        print(case, "FAILED:", str(e).splitlines()[0][:200])
        print("\n".join(l for l in tb if "File" in l)[-1200:])
