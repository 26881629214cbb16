"""An SMTP client that sends one message to bob@inboxd.test, then ends its side of the connection
(TCP half-close, shutdown(SHUT_WR)) and prints all the server sends until it closes.
Usage: half-close-client.py PORT DATA (the message and what follows it, dot and all)."""
import socket
import sys

port, data = int(sys.argv[1]), sys.argv[2].encode()
connection = socket.create_connection(("127.0.0.1", port), timeout=10)


def reply_to(line):
    if line:
        connection.sendall(line)
    received = b""
    while not received.endswith(b"\r\n") or received.split(b"\r\n")[-2][3:4] == b"-":
        chunk = connection.recv(4096)
        if not chunk:
            sys.exit(f"closed while waiting for the reply to {line!r}")
        received += chunk
    return received


reply_to(None)
for command in (b"EHLO client.example\r\n", b"MAIL FROM:<alice@sender.test>\r\n", b"RCPT TO:<bob@inboxd.test>\r\n", b"DATA\r\n"):
    reply_to(command)
connection.sendall(data)
connection.shutdown(socket.SHUT_WR)
rest = b""
while chunk := connection.recv(4096):
    rest += chunk
sys.stdout.write(rest.decode("latin1"))
