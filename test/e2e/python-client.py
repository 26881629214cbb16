"""Builds a multipart message with Python's email package, sends it with smtplib over STARTTLS,
and prints, as JSON, how Python's own parser reads the message it sent: what inboxd must agree with.

Usage: python3 python-client.py HOST PORT FROM TO
"""
import base64
import json
import os
import smtplib
import sys
from email import message_from_bytes, policy
from email.message import EmailMessage
from email.utils import formatdate, make_msgid

host, port, sender, recipient = sys.argv[1], int(sys.argv[2]), sys.argv[3], sys.argv[4]

message = EmailMessage()
message["From"] = f"Python Sender <{sender}>"
message["To"] = recipient
message["Subject"] = "Multipart from Python: naïve café ☕"
message["Date"] = formatdate(localtime=False)
message["Message-ID"] = make_msgid(domain="python.example")
message.set_content("Plain part: Grüße aus Python.\nSecond line, and a long one " + "x" * 120 + ".\n")
message.add_alternative("<html><body><p>HTML part: <b>Grüße</b> aus Python.</p></body></html>\n", subtype="html")
message.add_attachment(os.urandom(20_000), maintype="application", subtype="pdf", filename="invoice.pdf")
message.add_attachment("Zahl;Wert\nÄpfel;3\n".encode(), maintype="text", subtype="csv", filename="Übersicht 2026.csv")

with smtplib.SMTP(host, port, local_hostname="python.example", timeout=10) as client:
    client.starttls()  # beta's certificate is self-signed; smtplib does not verify by default
    client.send_message(message)

parsed = message_from_bytes(message.as_bytes(), policy=policy.default)
print(json.dumps({
    "subject": parsed["Subject"],
    "text": parsed.get_body(("plain",)).get_content(),
    "html": parsed.get_body(("html",)).get_content(),
    "attachments": [
        {"name": part.get_filename(), "contentType": part.get_content_type(), "content": base64.b64encode(part.get_payload(decode=True)).decode()}
        for part in parsed.iter_attachments()
    ],
}))
