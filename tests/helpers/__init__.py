"""What the tests share: workspaces, the reference case, the fixtures folder, the seats."""
