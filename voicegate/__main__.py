from voicegate.cli import main

main()
