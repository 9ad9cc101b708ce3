"""Questions, the project's subject: the bank they come from, the policy that decides when one is put to the agent
and which, and the inbox a person's question waits in.

    bank.py     question_bank.csv: load, validate, `workbench bank list|add|promote`
    policy.py   the intervention policy: stall / claim / suspicious triggers at a turn boundary, and the question
    inbox.py    the inbox file of an outside agent's campaign (`workbench ask`, the notebook's chat box)

Nothing here imports the agent, the campaign record or the UI: the agent loop, the campaign service and the
evolution all ask the policy the same question at their turn boundaries.
"""
