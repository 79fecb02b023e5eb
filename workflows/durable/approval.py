"""A durable function: reserve, wait for a person's approval, cool off, charge.

Served by scripts/durable-host.py (scripts/run.sh starts it on 127.0.0.1:9100) and deployed
by ../approval.durable.yaml. Answer the approval with the callback id the execution shows:
    flowbroker send --type flowbroker.callback.success --source /desk \
      --attr callbackid=<CallbackId> --data '{"approved": true}'
"""
from aws_durable_execution_sdk_python import DurableContext, durable_execution
from aws_durable_execution_sdk_python.config import Duration


@durable_execution
def handler(event: dict, context: DurableContext) -> dict:
    order = context.step(lambda _: {"id": event["order"], "total": 30}, name="reserve")
    approval = context.create_callback(name="approval")
    context.step(lambda _: print("approve with", approval.callback_id, flush=True), name="ask")
    decision = approval.result()  # suspends here: nothing runs while it waits
    context.wait(Duration.from_seconds(2), name="cool-off")
    return context.step(lambda _: {**order, "decision": decision, "charged": True}, name="charge")
