from django.core.management.base import BaseCommand

from ratinggame.models import Image
from ratinggame.pairs.derivatives import derivatives_make


class Command(BaseCommand):
    help = (
        "Make the display copies (WebP, 160/480/1024-px long side, EXIF orientation applied) of the "
        "stored images that have none yet; --force makes them again for every image."
    )

    def add_arguments(self, parser):
        parser.add_argument("--force", action="store_true", help="make them again for images that have them")

    def handle(self, *args, force: bool = False, **options):
        images = Image.objects.order_by("id")
        if not force:
            images = images.filter(derivatives=[])
        made = failed = 0
        for image in images.iterator(chunk_size=100):
            if derivatives_make(image=image):
                made += 1
            else:
                failed += 1
                self.stderr.write(f"image {image.pk} ({image}): Pillow could not read it; pages show the original")
        self.stdout.write(f"Display copies made for {made} image(s); {failed} could not be read.")
