from flopsreg.cli import main

raise SystemExit(main())
