"""The back office's people: members and their roles, passwords, welcome links, sign-in and
sessions. No flask here: the portal (app/portal/) and the operator's commands call these."""
