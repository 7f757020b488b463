"""A descriptor passed in a call to the Secret Service (org.freedesktop.secrets).

usage: dbus_pass_fd.py ADDRESS FILE

Connects to the bus at ADDRESS with descriptor passing negotiated (jeepney's enable_fds), opens
FILE (a file of a hangfs mount: its FLUSH never answers another user) and calls
org.freedesktop.Secret.Service.OpenSession("plain", <"">, FD), signature `svh`, with the
descriptor attached; then closes its own copy, so only the copies of the bus and of whoever the
bus handed it on to remain.

Lines out: `connected NAME` (its unique bus name), then for the call `error NAME` (the D-Bus
error that came back), `reply SIGNATURE` or `timeout` (nothing within 5 s). Everything stays
open until `close`.
"""
import os
import sys
import time

from jeepney import DBusAddress, HeaderFields, MessageType, new_method_call
from jeepney.io.blocking import open_dbus_connection

import wire

address, target = sys.argv[1], sys.argv[2]
bus = open_dbus_connection(bus=address, enable_fds=True)
wire.say("connected", bus.unique_name)
service = DBusAddress("/org/freedesktop/secrets", bus_name="org.freedesktop.secrets",
                      interface="org.freedesktop.Secret.Service")
fd = os.open(target, os.O_RDONLY)
call = new_method_call(service, "OpenSession", "svh", ("plain", ("s", ""), fd))
serial = next(bus.outgoing_serial)
bus.send(call, serial=serial)
os.close(fd)  # answered: hangfs answers its own user
deadline = time.monotonic() + 5
try:
    while True:
        answer = bus.receive(timeout=max(0, deadline - time.monotonic()))
        if answer.header.fields.get(HeaderFields.reply_serial) == serial:
            break
except TimeoutError:
    wire.say("timeout")
else:
    if answer.header.message_type == MessageType.error:
        wire.say("error", answer.header.fields.get(HeaderFields.error_name))
    else:
        wire.say("reply", answer.header.fields.get(HeaderFields.signature, ""))
wire.wait_for("close")
bus.close()
