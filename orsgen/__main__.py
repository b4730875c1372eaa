from orsgen.cli import main

if __name__ == "__main__":  # not when a worker process (datasets' save_to_disk) imports it
    raise SystemExit(main())
