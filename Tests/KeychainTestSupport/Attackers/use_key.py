"""Asks the daemon to sign with a stored private key named by its persistent reference
(operation useKey), as a local user outside the key's access group would, and prints the
status of the answer: `status N`, or `closed` / `timeout`. With `keyExchange` it asks for an
ECDH secret with the P-256 generator point as the peer instead.

usage: use_key.py SOCKET PERSISTENT_REF_HEX [sign|keyExchange]
"""
import sys

import wire


def main():
    socket_path, ref = sys.argv[1], bytes.fromhex(sys.argv[2])
    s = wire.connect(socket_path)
    if s is None:
        wire.say("closed")
        return
    use = sys.argv[3] if len(sys.argv) > 3 else "sign"
    if use == "keyExchange":
        peer = bytes.fromhex("04" "6b17d1f2e12c4247f8bce6e563a440f277037d812deb33a0f4a13945d898c296"
                             "4fe342e2fe1a7f9b8ee7eb4a7c0f9e162bce33576b315ececbb6406837bf51f5")
        options = {"use": "keyExchange", "algorithm": "algid:keyexchange:ECDH", "peer": peer}
        secrets = [b""]
    else:
        options = {"use": "sign", "algorithm": "algid:sign:ECDSA:message-X962:SHA256"}
        secrets = [b"signed by an outsider"]
    if not wire.send_all(s, wire.request(wire.OP_USE_KEY, {"v_PersistentRef": ref}, secrets, options), 5):
        wire.say("closed")
        return
    kind, payload = wire.read_frame(s, 10)
    if kind != "reply":
        wire.say(kind)
        return
    wire.say("status", wire.response_status(payload))


main()
