"""Asks the daemon to sign with a stored private key named by its persistent reference
(operation useKey), as a local user outside the key's access group would, and prints the
status of the answer: `status N`, or `closed` / `timeout`.

usage: use_key.py SOCKET PERSISTENT_REF_HEX
"""
import sys

import wire


def main():
    socket_path, ref = sys.argv[1], bytes.fromhex(sys.argv[2])
    s = wire.connect(socket_path)
    if s is None:
        wire.say("closed")
        return
    options = {"use": "sign", "algorithm": "algid:sign:ECDSA:message-X962:SHA256"}
    if not wire.send_all(s, wire.request(wire.OP_USE_KEY, {"v_PersistentRef": ref}, [b"signed by an outsider"], options), 5):
        wire.say("closed")
        return
    kind, payload = wire.read_frame(s, 10)
    if kind != "reply":
        wire.say(kind)
        return
    wire.say("status", wire.response_status(payload))


main()
