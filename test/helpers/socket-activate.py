#!/usr/bin/env python3
# Socket activation as systemd does it, for tests (systemd does not run here): binds and listens on
# 127.0.0.1:PORT once, holds the socket for its whole life, and runs COMMAND with it as fd 3 and
# LISTEN_FDS=1, LISTEN_PID=<the command's own pid> (set between fork and exec, as systemd does),
# LISTEN_FDNAMES=http (deploy/devutil.socket's FileDescriptorName=). Signals drive it:
#   SIGUSR1  stop: SIGTERM to the command, wait for it to exit  (systemctl stop devutil.service)
#   SIGUSR2  start it again on the same socket                  (systemctl start devutil.service)
#   SIGTERM  stop it and exit with its exit code
# `systemctl restart` is SIGUSR1 then SIGUSR2: in between, connections wait in the socket's backlog.
# Each event is one line on standard output: "socket-activate: started PID", "... exited CODE".
# Usage: socket-activate.py PORT COMMAND [ARG...]
import ctypes
import os
import signal
import socket
import sys

port = int(sys.argv[1])
command = sys.argv[2:]
listener = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
listener.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
listener.bind(("127.0.0.1", port))
listener.listen(4096)  # systemd's Backlog= default: SOMAXCONN
child = None
PR_SET_PDEATHSIG = 1


def say(text):
    sys.stdout.write("socket-activate: %s\n" % text)
    sys.stdout.flush()


def start(*_):
    global child
    if child is not None:
        return
    pid = os.fork()
    if pid == 0:
        try:
            # Stopped with the launcher even when it is killed outright (a failed test's cleanup);
            # systemd would stop the service's whole cgroup.
            ctypes.CDLL(None).prctl(PR_SET_PDEATHSIG, signal.SIGTERM)
            os.dup2(listener.fileno(), 3)
            os.set_inheritable(3, True)
            null = os.open(os.devnull, os.O_RDONLY)
            os.dup2(null, 0)
            env = dict(os.environ, LISTEN_FDS="1", LISTEN_PID=str(os.getpid()), LISTEN_FDNAMES="http")
            os.execvpe(command[0], command, env)
        finally:
            os._exit(127)
    child = pid
    say("started %d" % pid)


def stop(*_):
    global child
    if child is None:
        return 0
    try:
        os.kill(child, signal.SIGTERM)
    except ProcessLookupError:
        pass
    _, status = os.waitpid(child, 0)
    child = None
    code = os.waitstatus_to_exitcode(status)
    say("exited %d" % code)
    return code


def quit_(*_):
    code = stop()
    sys.exit(code if code >= 0 else 128 - code)


signal.signal(signal.SIGUSR1, stop)
signal.signal(signal.SIGUSR2, start)
signal.signal(signal.SIGTERM, quit_)
signal.signal(signal.SIGINT, quit_)
start()
while True:
    signal.pause()
