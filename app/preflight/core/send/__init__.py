"""The send path: provider clients, API keys, cost, audit log and the send session.

Faces use :class:`~preflight.core.send.session.SendSession`: ``prepare_send(...)`` →
:class:`SendPlan`, then ``execute(plan, Confirmation(...), on_chunk, cancel)`` →
:class:`SendResult`, or ``keep_local(...)``.
"""
