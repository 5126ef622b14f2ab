import sys, json
sys.path.insert(0, '/tmp/h1/erf')
from sim import run
line = [l for l in open(sys.argv[1]) if l.startswith('JSON')][0][5:]
dec = json.JSONDecoder(); P, i = dec.raw_decode(line); Q, _ = dec.raw_decode(line[i:].strip())
beta = float(sys.argv[2])
for lo, hi, n in [(0.45, 1.5, 2000), (1.5, 6, 2000), (6, 27.3, 800)]:
    print(lo, hi, run(P, Q, beta, lo, hi, n))
